package chess

import (
	"testing"

	"whale/data"
)

// BenchmarkMateSearch proves or refutes a mate within 2 on the first 128
// committed validation positions (mates) and the positions one ply before
// them in play (mostly not mates, the generator's common case). It reports
// positions visited per second.
func BenchmarkMateSearch(b *testing.B) {
	d, err := Builtin()
	if err != nil {
		b.Fatal(err)
	}
	tasks, _ := d.Tasks(data.SplitVal)
	var ps []*Position
	for _, t := range tasks[:128] {
		p, _ := ParseFEN(t.Hidden[HiddenStartFEN])
		ps = append(ps, p)
		// The same position with the other side to move is rarely a mate.
		q := *p
		q.turn ^= 1
		q.ep = noSq
		if !q.attacked(int(q.kings[q.turn^1]), int(q.turn)) {
			ps = append(ps, &q)
		}
	}
	nodes := 0
	for b.Loop() {
		for _, p := range ps {
			s := newSearcher(genNodeBudget)
			if _, err := s.mateDistance(p, 2); err != nil {
				b.Fatal(err)
			}
			nodes += s.nodes
		}
	}
	b.ReportMetric(float64(nodes)/b.Elapsed().Seconds(), "nodes/s")
	b.ReportMetric(float64(nodes)/float64(b.N*len(ps)), "nodes/position")
}

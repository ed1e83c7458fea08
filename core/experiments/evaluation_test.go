package experiments

import (
	"strings"
	"testing"
)

// RESULTS.md says what its runs evaluated: the sparse boundary set by
// default, every boundary under CurveDense, at the plan's curve k.
func TestEvaluationNoteSaysWhatIsEvaluatedWhen(t *testing.T) {
	p := Plan{Preset: "small", CurveK: 1}
	sparse, err := EvaluationNote(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"val at k = 2 on the 128 val tasks", "Test at k = 1 on the 256 test tasks", "boundaries 1, 2, 4, 8", "test at k = 8 once at the end"} {
		if !strings.Contains(sparse, want) {
			t.Errorf("sparse note lacks %q:\n%s", want, sparse)
		}
	}
	p.CurveDense = true
	dense, err := EvaluationNote(p)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(dense, "boundaries 1, 2, 4, 8") || !strings.Contains(dense, "at every phase boundary, for the curves") {
		t.Errorf("dense note:\n%s", dense)
	}
	p.TestTasks = 64
	if few, err := EvaluationNote(p); err != nil || !strings.Contains(few, "Test at k = 1 on the 64 test tasks") {
		t.Errorf("note with 64 test tasks (%v):\n%s", err, few)
	}
	if _, err := EvaluationNote(Plan{Preset: "huge"}); err == nil {
		t.Error("an unknown preset gave a note")
	}
}

// A plan's TestTasks sets every run's test tasks; 0 keeps the preset's.
func TestPlanTestTasks(t *testing.T) {
	for _, n := range []int{0, 64} {
		p := Plan{Domains: []string{"math"}, Conditions: []string{"weight-only", "vote-only"}, Seeds: 1, Preset: "small", TrainCalls: 10, SearchCalls: 10, TestTasks: n}
		jobs, err := p.Jobs()
		if err != nil {
			t.Fatal(err)
		}
		want := n
		if n == 0 {
			want = 256
		}
		for _, j := range jobs {
			if j.Config.TestTasks != want {
				t.Errorf("TestTasks %d: %s tests %d tasks, want %d", n, j.ID, j.Config.TestTasks, want)
			}
		}
	}
}

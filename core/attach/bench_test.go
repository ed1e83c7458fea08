package attach

import (
	"fmt"
	"testing"

	"whale/core/engine"
)

// BenchmarkEmitWithReaders measures what attached readers cost the writer:
// one event stored and published (what the engine's emit does), with 0, 1
// or 4 readers following the run live and draining as fast as they can.
// docs/PERFORMANCE.md records the figures.
func BenchmarkEmitWithReaders(b *testing.B) {
	for _, readers := range []int{0, 1, 4} {
		b.Run(fmt.Sprintf("readers=%d", readers), func(b *testing.B) {
			db := openStore(b)
			srv, err := Serve(db)
			if err != nil {
				b.Fatal(err)
			}
			defer srv.Close()
			cl, err := Dial(db.Path())
			if err != nil {
				b.Fatal(err)
			}
			run := newFakeRun(b, db, "r")
			defer srv.Add("r", run)()
			for range readers {
				st, err := cl.Follow("r", 0, 1<<16)
				if err != nil {
					b.Fatal(err)
				}
				defer st.Close()
				go drain(st)
			}
			b.ResetTimer()
			for i := range b.N {
				run.emit(engine.EvWeightStep, i, 512)
			}
		})
	}
}

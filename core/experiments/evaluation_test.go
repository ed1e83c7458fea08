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
	if _, err := EvaluationNote(Plan{Preset: "huge"}); err == nil {
		t.Error("an unknown preset gave a note")
	}
}

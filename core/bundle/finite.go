package bundle

import (
	"errors"
	"fmt"

	"whale/core/model"
)

// checkFinite refuses a model whose weights hold a NaN or an infinity, or
// whose logits over a probe sequence do: nothing whale does with such a
// model means anything (a run would train on NaN, an evaluation would
// score 0 without a word).
func checkFinite(m *model.Model, what string) error {
	err := m.CheckWeights()
	if err == nil {
		err = m.CheckLogits()
	}
	var nf *model.NonFiniteError
	if errors.As(err, &nf) {
		return fmt.Errorf("bundle: %s: the model's %s are not finite (%s): whale refuses to run on them", what, nf.What, nf.Where())
	}
	return err
}

package engine

import "encoding/json"

// Event kinds.
const (
	EvRunStarted       = "run_started"
	EvRunResumed       = "run_resumed"
	EvPhaseStarted     = "phase_started"
	EvWeightStep       = "weight_step"
	EvHarnessIteration = "harness_iteration"
	EvPhaseEnded       = "phase_ended"
	EvEval             = "eval"
	EvControl          = "control"
	EvCheckpoint       = "checkpoint"
	EvRunFinished      = "run_finished"
	EvError            = "error"
)

// Event is one thing that happened in a run. Data is the kind's payload.
// Events carry no wall-clock time in their deterministic fields: Seq,
// Kind, Phase, Round, Step, Iteration and Data are the same in a resumed
// run as in an uninterrupted one.
type Event struct {
	Seq       uint64 `json:"seq"`
	Kind      string `json:"kind"`
	Phase     Phase  `json:"phase,omitempty"`
	Round     int    `json:"round"`
	Step      int    `json:"step"`
	Iteration int    `json:"iteration"`
	// Rollouts counts the episodes and Calls the model calls (the budget
	// spent) of training and scoring so far.
	Rollouts int             `json:"rollouts"`
	Calls    int             `json:"calls"`
	Data     json.RawMessage `json:"data,omitempty"`
}

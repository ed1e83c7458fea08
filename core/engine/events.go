package engine

import (
	"encoding/json"
	"fmt"

	"whale/core/eval"
	"whale/core/search"
	"whale/core/weights"
)

// Event kinds. Each kind's payload (Event.Data) is one exported type,
// listed beside it; Event.Payload decodes it. Readers (the workbench, the
// headless printer, the bench) decode through Payload and never keep
// copies of these types, so the compiler checks every field they read.
const (
	EvRunStarted       = "run_started"       // Config
	EvRunResumed       = "run_resumed"       // no payload
	EvForked           = "forked"            // ForkOrigin
	EvPhaseStarted     = "phase_started"     // PhaseStartedData
	EvWeightStep       = "weight_step"       // WeightStepData
	EvHarnessIteration = "harness_iteration" // HarnessIterationData
	EvPhaseEnded       = "phase_ended"       // PhaseRecord
	EvEval             = "eval"              // EvalData
	EvControl          = "control"           // JournaledCommand
	EvCheckpoint       = "checkpoint"        // CheckpointData
	EvRunFinished      = "run_finished"      // Summary
)

// EventKinds lists every kind, in the order a run first emits them.
var EventKinds = []string{EvForked, EvRunStarted, EvRunResumed, EvPhaseStarted, EvWeightStep, EvHarnessIteration,
	EvEval, EvControl, EvPhaseEnded, EvCheckpoint, EvRunFinished}

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

// ErrUnknownEvent is wrapped by Payload for a kind this build does not
// know (a store written by a newer whale): readers show the kind and go on.
var ErrUnknownEvent = fmt.Errorf("engine: unknown event kind")

// Payload decodes the event's data into its kind's type (a value, not a
// pointer): Config, ForkOrigin, PhaseStartedData, WeightStepData,
// HarnessIterationData, PhaseRecord, EvalData, JournaledCommand,
// CheckpointData or Summary; nil for run_resumed. A payload that does not
// decode is an error naming the event.
func (ev Event) Payload() (any, error) {
	var v any
	var err error
	switch ev.Kind {
	case EvRunResumed:
		return nil, nil
	case EvRunStarted:
		v, err = decode[Config](ev.Data)
	case EvForked:
		v, err = decode[ForkOrigin](ev.Data)
	case EvPhaseStarted:
		v, err = decode[PhaseStartedData](ev.Data)
	case EvWeightStep:
		v, err = decode[WeightStepData](ev.Data)
	case EvHarnessIteration:
		v, err = decode[HarnessIterationData](ev.Data)
	case EvPhaseEnded:
		v, err = decode[PhaseRecord](ev.Data)
	case EvEval:
		v, err = decode[EvalData](ev.Data)
	case EvControl:
		v, err = decode[JournaledCommand](ev.Data)
	case EvCheckpoint:
		v, err = decode[CheckpointData](ev.Data)
	case EvRunFinished:
		v, err = decode[Summary](ev.Data)
	default:
		return nil, fmt.Errorf("%w %q (event %d)", ErrUnknownEvent, ev.Kind, ev.Seq)
	}
	if err != nil {
		return nil, fmt.Errorf("engine: event %d (%s): payload: %w", ev.Seq, ev.Kind, err)
	}
	return v, nil
}

func decode[T any](b []byte) (T, error) {
	var v T
	err := json.Unmarshal(b, &v)
	return v, err
}

// PhaseStartedData is the payload of EvPhaseStarted.
type PhaseStartedData struct {
	Kind  Phase `json:"kind"`
	Round int   `json:"round"`
	// Harness is the incumbent the phase starts with.
	Harness string `json:"harness"`
}

// EvalData is the payload of EvEval: one evaluation of a harness under
// the current weights.
type EvalData struct {
	Split   string      `json:"split"`
	Harness string      `json:"harness"`
	Weights string      `json:"weights"`
	Report  eval.Report `json:"report"`
	// Tasks is each task's mean reward over its k samples, so that two
	// runs measured on the same tasks can be compared task by task
	// (whale compare's paired difference); absent in older stores.
	Tasks map[string]float64 `json:"tasks,omitempty"`
}

// CheckpointData is the payload of EvCheckpoint: a kept checkpoint.
type CheckpointData struct {
	ID      string `json:"id"`
	Weights string `json:"weights"`
	Harness string `json:"harness"`
}

// WeightStepData is the payload of EvWeightStep.
type WeightStepData struct {
	Stats weights.Stats `json:"stats"`
	// Replayed counts samples of earlier steps trained on again, and
	// ReplayDropped those dropped because the current harness reads a
	// different action from their completion.
	Replayed      int `json:"replayed,omitempty"`
	ReplayDropped int `json:"replay_dropped,omitempty"`
	// VoteExtra counts the verified-correct samples of voting calls,
	// passed over by the vote, that the step trained on beside the chosen
	// completions (Config.ChosenOnly: 0).
	VoteExtra  int     `json:"vote_extra,omitempty"`
	RewardMean float64 `json:"reward_mean"`
	// Entropy is the mean token entropy (nats) of the step's sampled
	// completions and KeptFraction the share of its fresh rollouts kept
	// (reward ≥ the threshold): the weight phase's health, which falls
	// when training collapses the policy onto one answer.
	Entropy      float64  `json:"entropy"`
	KeptFraction float64  `json:"kept_fraction"`
	Patience     Patience `json:"patience"`
	Skipped      string   `json:"skipped,omitempty"`
}

// HarnessIterationData is the payload of EvHarnessIteration.
type HarnessIterationData struct {
	Result   search.IterationResult `json:"result"`
	Patience Patience               `json:"patience"`
	// Knobs are the incumbent's SEARCH_SPACE knobs and Frozen those a
	// person froze (the TUI's knob list).
	Knobs  []string `json:"knobs"`
	Frozen []string `json:"frozen"`
	// Board is the leaderboard after the iteration (top entries).
	Board []BoardRow `json:"board"`
}

// BoardRow is one leaderboard row of a harness_iteration event.
type BoardRow struct {
	Hash      string  `json:"hash"`
	Parent    string  `json:"parent,omitempty"`
	Mechanism string  `json:"mechanism,omitempty"`
	Score     float64 `json:"score"`
	CILo      float64 `json:"ci_lo"`
	CIHi      float64 `json:"ci_hi"`
	Rollouts  int     `json:"rollouts"`
	Iteration int     `json:"iteration"`
	Status    string  `json:"status"`
	Complete  bool    `json:"complete"`
	// Calls is the model calls its scoring cost (its price).
	Calls int `json:"calls"`
	// Gain is its paired gain over the incumbent it was compared with
	// (Against), with the 95 % interval; HasGain once compared.
	Gain    float64 `json:"gain"`
	GainLo  float64 `json:"gain_lo"`
	GainHi  float64 `json:"gain_hi"`
	Against string  `json:"against,omitempty"`
	HasGain bool    `json:"has_gain,omitempty"`
	// NullLift is the null-policy audit's lift over h0 (HasNull once
	// audited); NullRefused says it was kept from the incumbency for it.
	NullLift    float64 `json:"null_lift,omitempty"`
	HasNull     bool    `json:"has_null,omitempty"`
	NullRefused bool    `json:"null_refused,omitempty"`
	// Invalid is why it was refused before scoring (status "invalid":
	// it does not load).
	Invalid string `json:"invalid,omitempty"`
}

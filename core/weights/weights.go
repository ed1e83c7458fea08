// Package weights holds Phase A's operators: given rollouts sampled through
// the frozen harness and scored by the verifier, update the model's
// weights. RSFT (online rejection-sampling fine-tuning) is the default;
// DPO and GRPO sit behind the same interface.
//
// It knows rollouts only as token sequences with rewards: never a harness,
// a domain or a screen.
package weights

import (
	"fmt"
	"slices"
	"sort"

	"whale/core/model"
)

// Call is one policy call of a rollout: the prompt the model saw and the
// tokens it generated, with their log-probabilities at sampling time.
type Call struct {
	Prompt     []int32
	Completion []int32
	LogProbs   []float32
}

// Sample is one scored rollout.
type Sample struct {
	// Group identifies the prompt the rollout answered: GRPO normalises
	// rewards within a group and DPO pairs within it.
	Group   string
	Calls   []Call
	Reward  float64
	Failure string // the failure kind, "" when none
}

// Stats reports one operator step.
type Stats struct {
	Rollouts int `json:"rollouts"`
	// Kept counts samples with reward ≥ the threshold; Rejected counts the
	// others by failure kind ("low_reward" when a partial reward fell short
	// without a failure kind).
	Kept     int            `json:"kept"`
	Rejected map[string]int `json:"rejected"`
	// Trained counts the samples that contributed to the update (RSFT: the
	// kept; DPO: both sides of each pair; GRPO: samples in groups with
	// reward spread, not clipped).
	Trained  int     `json:"trained"`
	Pairs    int     `json:"pairs,omitempty"`
	Loss     float64 `json:"loss"`
	GradNorm float64 `json:"grad_norm"`
	Tokens   float64 `json:"tokens"`
	LR       float64 `json:"lr"`
	// Updated is false when nothing was trainable and the weights were
	// left as they were.
	Updated bool `json:"updated"`
}

// Optimizer is a Phase A operator.
type Optimizer interface {
	Name() string
	// Step updates the weights from one batch of samples. On
	// model.ErrNonFinite the weights are unchanged and the caller decides
	// to roll back or skip.
	Step(samples []Sample) (Stats, error)
}

// DefaultThreshold is the reference's keep rule: reward ≥ 0.5.
const DefaultThreshold = 0.5

// countKept fills Rollouts, Kept and Rejected.
func countKept(samples []Sample, threshold float64) Stats {
	st := Stats{Rollouts: len(samples), Rejected: map[string]int{}}
	for _, s := range samples {
		if s.Reward >= threshold {
			st.Kept++
			continue
		}
		kind := s.Failure
		if kind == "" {
			kind = "low_reward"
		}
		st.Rejected[kind]++
	}
	return st
}

// sequences turns a sample's calls into training sequences: prompt then
// completion, with the loss weight w on completion tokens only (the
// prompt — system, user and tool text — is never trained on).
//
// A call whose prompt and completion are, token for token, the start of a
// later call's prompt (a multi-turn episode's earlier turn, whose context
// the next turn extends) trains inside that later call's sequence: its
// completion's positions carry the weight there. Attention is causal, so
// every such position sees the same tokens before it as in a sequence of
// its own, and the loss and gradients are the same sum; the earlier
// turn's prompt is not run through the model a second time (about half of
// a math step's tokens with the calculator's two turns).
func sequences(s Sample, w float32) []model.Sequence {
	var rev []model.Sequence // built from the last call back
	for i := len(s.Calls) - 1; i >= 0; i-- {
		c := s.Calls[i]
		if len(c.Completion) == 0 {
			continue
		}
		n := len(c.Prompt) + len(c.Completion)
		if j := extending(rev, c); j >= 0 {
			for t := len(c.Prompt); t < n; t++ {
				rev[j].Mask[t] += w // += keeps a repeated call's term
			}
			continue
		}
		toks := make([]int32, 0, n)
		toks = append(append(toks, c.Prompt...), c.Completion...)
		mask := make([]float32, n)
		for t := len(c.Prompt); t < n; t++ {
			mask[t] = w
		}
		rev = append(rev, model.Sequence{Tokens: toks, Mask: mask})
	}
	out := make([]model.Sequence, len(rev))
	for i, q := range rev {
		out[len(rev)-1-i] = q
	}
	return out
}

// extending returns the index of the sequence in seqs that starts with c's
// prompt and completion and is longer, or -1.
func extending(seqs []model.Sequence, c Call) int {
	n := len(c.Prompt) + len(c.Completion)
	for j, q := range seqs {
		if len(q.Tokens) > n && slices.Equal(q.Tokens[:len(c.Prompt)], c.Prompt) && slices.Equal(q.Tokens[len(c.Prompt):n], c.Completion) {
			return j
		}
	}
	return -1
}

func completionTokens(s Sample) int {
	n := 0
	for _, c := range s.Calls {
		n += len(c.Completion)
	}
	return n
}

// microBatches splits seqs into micro-batches of at most maxTokens tokens
// (a sequence longer than that goes alone), so activation memory stays
// bounded whatever the batch. It sorts the sequences by their tokens
// first, so that sequences beginning with the same prompt (a task's
// samples, and the passed-over samples of its votes) sit side by side in
// one micro-batch, where the model runs their prompt once
// (model.Trainer's shared rows). The step is a sum over the sequences, so
// their order changes it only by float32 rounding.
func microBatches(seqs []model.Sequence, maxTokens int) [][]model.Sequence {
	seqs = slices.Clone(seqs)
	slices.SortStableFunc(seqs, func(a, b model.Sequence) int { return slices.Compare(a.Tokens, b.Tokens) })
	var out [][]model.Sequence
	var cur []model.Sequence
	longest := 0
	for _, s := range seqs {
		l := max(longest, len(s.Tokens))
		if len(cur) > 0 && l*(len(cur)+1) > maxTokens { // padded size of the micro-batch
			out = append(out, cur)
			cur, l = nil, len(s.Tokens)
		}
		cur = append(cur, s)
		longest = l
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// groups returns sample indices by group, groups in sorted order and
// indices in input order, so results never depend on map iteration.
func groups(samples []Sample) [][]int {
	by := map[string][]int{}
	for i, s := range samples {
		by[s.Group] = append(by[s.Group], i)
	}
	keys := make([]string, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([][]int, len(keys))
	for i, k := range keys {
		out[i] = by[k]
	}
	return out
}

func checkThreshold(t float64) error {
	if !(t >= 0 && t <= 1) {
		return fmt.Errorf("weights: reward threshold %v outside [0, 1]", t)
	}
	return nil
}

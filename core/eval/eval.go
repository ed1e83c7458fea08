// Package eval turns rollout outcomes into the figures whale reports:
// mean@k (the paper's metric: mean correctness over k samples per task),
// pass@k, bootstrap confidence intervals over tasks, and failure breakdowns.
// It knows outcomes only, never how they were produced.
package eval

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// Outcome is the result of one rollout.
type Outcome struct {
	TaskID  string
	Reward  float64 // in [0, 1]
	Failure string  // "" when the rollout earned full reward
	// Answer identifies what the rollout finally submitted (normalised:
	// equal answers compare equal), for maj@k; "" when it submitted
	// nothing.
	Answer string
}

// SuccessThreshold: a rollout counts as solved for pass@k when its reward is
// at least this (rewards of the built-in domains are 0 or 1).
const SuccessThreshold = 0.5

// Report summarises outcomes grouped by task.
type Report struct {
	Tasks    int     `json:"tasks"`
	Rollouts int     `json:"rollouts"`
	K        int     `json:"k"`
	MeanAtK  float64 `json:"mean_at_k"`
	PassAtK  float64 `json:"pass_at_k"`
	// MajAtK is the correctness of each task's plurality answer over its k
	// samples (ties: the answer seen first; rollouts that submitted
	// nothing never win), averaged over tasks: what a harness that votes
	// over k samples could reach.
	MajAtK float64 `json:"maj_at_k"`
	// CI95 is a 95 % percentile-bootstrap interval of MeanAtK, resampling
	// tasks (not rollouts: samples of one task are correlated).
	CI95         [2]float64     `json:"ci95"`
	FailureKinds map[string]int `json:"failure_kinds"`
}

// BootstrapResamples is the number of bootstrap resamples behind CI95.
const BootstrapResamples = 2000

// Summarise computes a Report. Every task must have the same number of
// outcomes k (the caller ran k samples per task); seed makes the bootstrap
// reproducible.
func Summarise(outs []Outcome, seed uint64) (Report, error) {
	byTask := map[string][]Outcome{}
	var order []string
	for _, o := range outs {
		if o.Reward < 0 || o.Reward > 1 || math.IsNaN(o.Reward) {
			return Report{}, fmt.Errorf("eval: task %s: reward %v outside [0, 1]", o.TaskID, o.Reward)
		}
		if _, ok := byTask[o.TaskID]; !ok {
			order = append(order, o.TaskID)
		}
		byTask[o.TaskID] = append(byTask[o.TaskID], o)
	}
	r := Report{Tasks: len(order), Rollouts: len(outs), FailureKinds: map[string]int{}}
	if len(order) == 0 {
		return r, nil
	}
	sort.Strings(order)
	r.K = len(byTask[order[0]])
	means := make([]float64, len(order))
	for i, id := range order {
		os := byTask[id]
		if len(os) != r.K {
			return Report{}, fmt.Errorf("eval: task %s has %d outcomes, task %s has %d: k must be the same for every task", id, len(os), order[0], r.K)
		}
		solved := false
		for _, o := range os {
			means[i] += o.Reward
			solved = solved || o.Reward >= SuccessThreshold
			if o.Failure != "" {
				r.FailureKinds[o.Failure]++
			}
		}
		means[i] /= float64(r.K)
		if solved {
			r.PassAtK++
		}
		r.MajAtK += majority(os)
	}
	r.MajAtK /= float64(len(order))
	r.MeanAtK = mean(means)
	r.PassAtK /= float64(len(order))
	r.CI95 = Bootstrap(means, seed)
	return r, nil
}

// TaskMeans is each task's mean reward over its outcomes.
func TaskMeans(outs []Outcome) map[string]float64 {
	sum, n := map[string]float64{}, map[string]int{}
	for _, o := range outs {
		sum[o.TaskID] += o.Reward
		n[o.TaskID]++
	}
	for id := range sum {
		sum[id] /= float64(n[id])
	}
	return sum
}

// majority is the reward of the plurality answer among os (0 when none
// submitted anything).
func majority(os []Outcome) float64 {
	count := map[string]int{}
	for _, o := range os {
		if o.Answer != "" {
			count[o.Answer]++
		}
	}
	best, reward := "", 0.0
	for _, o := range os {
		if o.Answer != "" && count[o.Answer] > count[best] {
			best, reward = o.Answer, o.Reward
		}
	}
	return reward
}

// Bootstrap returns the 95 % percentile-bootstrap interval of the mean of
// xs, from BootstrapResamples resamples drawn by a PCG seeded with seed.
func Bootstrap(xs []float64, seed uint64) [2]float64 {
	if len(xs) == 0 {
		return [2]float64{}
	}
	rng := rand.New(rand.NewPCG(seed, 0xb007))
	ms := make([]float64, BootstrapResamples)
	for b := range ms {
		s := 0.0
		for range xs {
			s += xs[rng.IntN(len(xs))]
		}
		ms[b] = s / float64(len(xs))
	}
	sort.Float64s(ms)
	lo := ms[int(0.025*float64(len(ms)))]
	hi := ms[int(math.Ceil(0.975*float64(len(ms))))-1]
	return [2]float64{lo, hi}
}

// PassAtK is the unbiased estimator of pass@k from n samples with c correct:
// 1 − C(n−c, k) / C(n, k), computed as a product to stay exact for large n.
func PassAtK(n, c, k int) float64 {
	if k <= 0 || n < k {
		return math.NaN()
	}
	if n-c < k {
		return 1
	}
	p := 1.0
	for i := n - c + 1; i <= n; i++ {
		p *= 1 - float64(k)/float64(i)
	}
	return 1 - p
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// Package search is Phase B: it proposes harness candidates, scores them on
// the val split against frozen weights, stops clear losers early, and keeps
// an archive whose best entry is the incumbent — so a phase can revert to
// an older harness. It knows harnesses as sources and scores; it never
// trains weights and never draws a screen.
package search

import (
	"fmt"
	"math"
	"sort"
)

// Status of an archived harness.
type Status string

const (
	StatusCandidate Status = "candidate"
	StatusIncumbent Status = "incumbent"
	// StatusPruned: a person ruled the harness out; it is never accepted
	// and never mutated again.
	StatusPruned Status = "pruned"
)

// Entry is one harness in the archive.
type Entry struct {
	Hash   string `json:"hash"`
	Source string `json:"source"`
	Parent string `json:"parent,omitempty"`
	// Mechanism names what changed from the parent ("PARSER=_parse_bare").
	Mechanism string `json:"mechanism,omitempty"`
	Proposer  string `json:"proposer,omitempty"`
	// Score is the mean reward over the scored val rollouts; Scored counts
	// them; Sum and SumSq let scores from several rounds merge exactly.
	Score    float64 `json:"score"`
	Scored   int     `json:"scored"`
	Sum      float64 `json:"sum"`
	SumSq    float64 `json:"sum_sq"`
	Rollouts int     `json:"rollouts"`
	// Tasks sums the rewards per val task (by task id), for the Pareto
	// front over tasks.
	Tasks map[string]float64 `json:"tasks,omitempty"`
	// Complete is set once the entry was scored on the whole val split
	// (successive halving may stop a loser before).
	Complete  bool    `json:"complete"`
	Iteration int     `json:"iteration"`
	Status    Status  `json:"status"`
	Audit     float64 `json:"audit,omitempty"` // audit-split score, for accepted harnesses
	HasAudit  bool    `json:"has_audit,omitempty"`
	// Calls counts the model calls (completions, voting samples
	// included) its scored rollouts cost: the harness's price.
	Calls int `json:"calls,omitempty"`
	// Failures counts its scored rollouts by failure kind (data.FailureKind;
	// "" for a success), under the current weights: what a proposer
	// reads to target fragments.
	Failures map[string]int `json:"failures,omitempty"`
	// Gain is the paired gain of its score over the harness it was
	// compared with (Against, the incumbent of the time) on the same val
	// tasks and the same random draws, with the 95 % interval; HasGain is
	// set once it was compared.
	Gain    float64 `json:"gain,omitempty"`
	GainLo  float64 `json:"gain_lo,omitempty"`
	GainHi  float64 `json:"gain_hi,omitempty"`
	Against string  `json:"against,omitempty"`
	HasGain bool    `json:"has_gain,omitempty"`
	// Null is the null-policy audit's verdict for an entry that won its
	// comparison: the lift content-blind policies get from it over h0
	// (points) and whether that kept it from being accepted.
	NullLift    float64 `json:"null_lift,omitempty"`
	HasNull     bool    `json:"has_null,omitempty"`
	NullRefused bool    `json:"null_refused,omitempty"`
	// Invalid is why the harness was refused before scoring (it does not
	// load: the loader's file:line:col and rule); set with StatusInvalid.
	Invalid string `json:"invalid,omitempty"`
	// Tied is set when the entry's first pass over val matched the
	// incumbent's on every task exactly (same draws, same rewards: a
	// change no val rollout noticed). It is stopped there and never
	// re-scored when the weights change.
	Tied bool `json:"tied,omitempty"`
}

// CI95 is a normal-approximation 95 % interval of the entry's mean score.
func (e *Entry) CI95() (lo, hi float64) {
	if e.Scored < 2 {
		return 0, 1
	}
	n := float64(e.Scored)
	v := math.Max(0, e.SumSq/n-e.Score*e.Score) * n / (n - 1)
	h := 1.96 * math.Sqrt(v/n)
	return e.Score - h, e.Score + h
}

// add merges the rewards of tasks (in order) into the entry's score.
func (e *Entry) add(tasks []string, rewards []float64) {
	if e.Tasks == nil {
		e.Tasks = map[string]float64{}
	}
	for i, r := range rewards {
		e.Tasks[tasks[i]] += r
		e.Sum += r
		e.SumSq += r * r
	}
	e.Scored += len(rewards)
	e.Rollouts += len(rewards)
	if e.Scored > 0 {
		e.Score = e.Sum / float64(e.Scored)
	}
}

// Archive holds every harness a search has seen, keyed by hash.
type Archive struct {
	Entries map[string]*Entry `json:"entries"`
	// Frozen knobs are never varied by a proposer.
	Frozen map[string]bool `json:"frozen"`
	// Incumbent is the hash of the accepted harness.
	Incumbent string `json:"incumbent"`
	// Weights identifies the weights the scores were measured with: scores
	// under other weights are not comparable (see ResetScores).
	Weights string `json:"weights"`
}

// ResetScores starts scoring against new weights: every entry keeps its
// lineage and status but loses its score, so it can be proposed and
// scored again; Best considers only entries scored under these weights.
func (a *Archive) ResetScores(weights string) {
	a.Weights = weights
	for _, e := range a.Entries {
		e.Score, e.Scored, e.Sum, e.SumSq, e.Complete = 0, 0, 0, 0, false
		e.Audit, e.HasAudit = 0, false
		e.Tasks, e.Failures, e.Calls = nil, nil, 0
		e.Gain, e.GainLo, e.GainHi, e.Against, e.HasGain = 0, 0, 0, "", false
		// The null-policy verdict depends on the harness alone: it stands.
	}
}

// NewArchive returns an empty archive.
func NewArchive() *Archive {
	return &Archive{Entries: map[string]*Entry{}, Frozen: map[string]bool{}}
}

// Add records a new entry (an existing hash is left as it is) and returns
// the archived entry.
func (a *Archive) Add(e Entry) *Entry {
	if old, ok := a.Entries[e.Hash]; ok {
		return old
	}
	if e.Status == "" {
		e.Status = StatusCandidate
	}
	a.Entries[e.Hash] = &e
	return &e
}

// Best returns the complete, unpruned entry with the highest score; ties go
// to the entry seen first (lower iteration, then hash), so a newcomer must
// win outright.
func (a *Archive) Best() *Entry {
	var best *Entry
	for _, h := range a.sortedHashes() {
		e := a.Entries[h]
		if e.Status == StatusPruned || !e.Complete {
			continue
		}
		if best == nil || e.Score > best.Score || (e.Score == best.Score && e.Iteration < best.Iteration) {
			best = e
		}
	}
	return best
}

// Pareto returns the front of complete, unpruned entries over val tasks:
// those no other entry dominates (at least as good on every task, better
// on one), best score first, the incumbent always included, at most max
// entries (max < 1: all). Identical score vectors keep the entry seen
// first. This is the population Fast-Slow Training samples from.
func (a *Archive) Pareto(max int) []*Entry {
	var live []*Entry
	for _, h := range a.sortedHashes() {
		if e := a.Entries[h]; e.Complete && e.Status != StatusPruned {
			live = append(live, e)
		}
	}
	earlier := func(x, y *Entry) bool {
		return x.Iteration < y.Iteration || (x.Iteration == y.Iteration && x.Hash < y.Hash)
	}
	var front []*Entry
	for _, e := range live {
		dominated := false
		for _, o := range live {
			if o == e {
				continue
			}
			if c := compareTasks(o, e); c > 0 || (c == 0 && earlier(o, e)) {
				dominated = true
				break
			}
		}
		if !dominated || e.Hash == a.Incumbent {
			front = append(front, e)
		}
	}
	sort.SliceStable(front, func(i, j int) bool {
		x, y := front[i], front[j]
		if (x.Hash == a.Incumbent) != (y.Hash == a.Incumbent) {
			return x.Hash == a.Incumbent
		}
		if x.Score != y.Score {
			return x.Score > y.Score
		}
		return earlier(x, y)
	})
	if max > 0 && len(front) > max {
		front = front[:max]
	}
	return front
}

// compareTasks is 1 when x dominates y on per-task mean reward, 0 when
// their vectors are equal, and -1 otherwise. Entries scored a different
// number of passes compare by mean.
func compareTasks(x, y *Entry) int {
	px, py := passes(x), passes(y)
	better, equal := false, true
	for t, sy := range y.Tasks {
		mx, my := x.Tasks[t]/px, sy/py
		if mx < my {
			return -1
		}
		if mx > my {
			better = true
		}
		if mx != my {
			equal = false
		}
	}
	for t := range x.Tasks {
		if _, ok := y.Tasks[t]; !ok {
			return -1 // scored on different tasks: not comparable
		}
	}
	switch {
	case better:
		return 1
	case equal:
		return 0
	}
	return -1
}

func passes(e *Entry) float64 {
	if len(e.Tasks) == 0 {
		return 1
	}
	return math.Max(1, float64(e.Scored)/float64(len(e.Tasks)))
}

// Accept makes hash the incumbent.
func (a *Archive) Accept(hash string) error {
	e, ok := a.Entries[hash]
	if !ok {
		return fmt.Errorf("search: accept %s: not in the archive", short(hash))
	}
	if e.Status == StatusPruned {
		return fmt.Errorf("search: accept %s: the harness is pruned", short(hash))
	}
	if old, ok := a.Entries[a.Incumbent]; ok && old.Status == StatusIncumbent {
		old.Status = StatusCandidate
	}
	e.Status = StatusIncumbent
	a.Incumbent = hash
	return nil
}

// Prune rules a harness out. Pruning the incumbent is refused: accept
// another first (the engine does so by re-selecting the best).
func (a *Archive) Prune(hash string) error {
	e, ok := a.Entries[hash]
	if !ok {
		return fmt.Errorf("search: prune %s: not in the archive", short(hash))
	}
	if hash == a.Incumbent {
		return fmt.Errorf("search: prune %s: it is the incumbent", short(hash))
	}
	e.Status = StatusPruned
	return nil
}

// Unprune makes a pruned harness a candidate again.
func (a *Archive) Unprune(hash string) error {
	e, ok := a.Entries[hash]
	if !ok || e.Status != StatusPruned {
		return fmt.Errorf("search: unprune %s: not a pruned harness", short(hash))
	}
	e.Status = StatusCandidate
	return nil
}

// Leaderboard returns entries by score, best first (ties: earlier first).
func (a *Archive) Leaderboard() []*Entry {
	var out []*Entry
	for _, h := range a.sortedHashes() {
		out = append(out, a.Entries[h])
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].Iteration < out[j].Iteration
	})
	return out
}

func (a *Archive) sortedHashes() []string {
	hs := make([]string, 0, len(a.Entries))
	for h := range a.Entries {
		hs = append(hs, h)
	}
	sort.Strings(hs)
	return hs
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

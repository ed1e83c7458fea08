package search

import (
	"fmt"
	"strings"
)

// StatusInvalid: the harness does not load (it breaks the contract, or its
// top level fails): it was refused before any rollout, with the reason in
// Entry.Invalid, and is never proposed again. A search goes on past it.
const StatusInvalid Status = "invalid"

// Refusal is a proposed candidate refused before it was scored because it
// does not load.
type Refusal struct {
	Hash      string `json:"hash"`
	Mechanism string `json:"mechanism,omitempty"`
	// Reason is the loader's error: file:line:col and the rule broken.
	Reason string `json:"reason"`
}

// refuse records c as invalid in the archive and in r.
func refuse(a *Archive, c Candidate, err error, r *IterationResult) {
	e := a.Add(Entry{Hash: c.Hash, Source: c.Source, Parent: c.Parent, Mechanism: c.Mechanism, Proposer: c.Proposer, Iteration: r.Iteration})
	if e.Status == StatusIncumbent {
		return // cannot happen: the incumbent loaded; never demote it
	}
	e.Status, e.Invalid = StatusInvalid, err.Error()
	r.Invalid = append(r.Invalid, Refusal{Hash: c.Hash, Mechanism: c.Mechanism, Reason: e.Invalid})
}

// InvalidText says, for a progress line, how many proposals were refused
// because they do not load and why the first was ("" for none),
// beginning with "; ".
func (r IterationResult) InvalidText() string {
	if len(r.Invalid) == 0 {
		return ""
	}
	first := r.Invalid[0]
	reason, _, _ := strings.Cut(first.Reason, "\n")
	what := short(first.Hash)
	if first.Mechanism != "" {
		what += " (" + first.Mechanism + ")"
	}
	return fmt.Sprintf("; %d proposals refused (they do not load): %s: %s", len(r.Invalid), what, reason)
}

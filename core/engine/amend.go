package engine

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"whale/core/store"
)

// Amendment is what a run may change when it resumes: the learning rate
// (after a run stopped on a non-finite step, say) and the endpoints of its
// server policy (after the servers moved; PolicyURL is one URL or a
// comma-separated list, a pool). Zero fields change nothing.
type Amendment struct {
	LR        float64
	PolicyURL string
}

// Amend rewrites the stored configuration of run with a, so that the run
// resumes with it and its record says what it now runs with. A finished
// run, a server URL for a run without a server, and a learning rate that
// is not positive and finite are refused; the changed configuration must
// validate.
func Amend(db *store.DB, runID string, a Amendment) (Config, error) {
	r, err := db.GetRun(runID)
	if err != nil {
		return Config{}, err
	}
	cfg, err := DecodeConfig(runID, r.Config)
	if err != nil {
		return cfg, err
	}
	if a == (Amendment{}) {
		return cfg, nil
	}
	if r.Status == "finished" {
		return cfg, fmt.Errorf("engine: run %s is finished: there is nothing left to run with a changed setting", runID)
	}
	if a.LR != 0 {
		if !(a.LR > 0) || math.IsInf(a.LR, 0) {
			return cfg, fmt.Errorf("engine: run %s: --lr %v (want a positive, finite learning rate)", runID, a.LR)
		}
		cfg.LR = a.LR
	}
	if a.PolicyURL != "" {
		if cfg.PolicyServer == nil {
			return cfg, fmt.Errorf("engine: run %s samples from its local model, not a server: --policy-url does not apply", runID)
		}
		ps := *cfg.PolicyServer
		urls := strings.Split(a.PolicyURL, ",")
		ps.URL, ps.URLs = urls[0], nil
		if len(urls) > 1 {
			ps.URLs = urls
		}
		cfg.PolicyServer = &ps
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("engine: run %s: %w", runID, err)
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return cfg, fmt.Errorf("engine: run %s: %w", runID, err)
	}
	return cfg, db.SetRunConfig(runID, b)
}

package main

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"whale/core/engine"
	"whale/core/remote"
)

// serverFlags are --policy-url and its companions: an OpenAI-compatible
// server as the policy (core/remote), on eval, harness run and run. The
// API key comes from the environment (remote.APIKeyEnv), never a flag.
type serverFlags struct {
	url, model  string
	concurrency int
	timeout     time.Duration
	maxN        int
}

func (s *serverFlags) register(f *pflag.FlagSet) {
	f.StringVar(&s.url, "policy-url", "", "an OpenAI-compatible server as the policy, e.g. http://127.0.0.1:8000/v1 (API key, if any, in $"+remote.APIKeyEnv+")")
	f.StringVar(&s.model, "policy-model", "", "with --policy-url: the model name the server serves")
	f.IntVar(&s.concurrency, "policy-concurrency", remote.DefaultConcurrency, "with --policy-url: HTTP calls in flight at once")
	f.DurationVar(&s.timeout, "policy-timeout", remote.DefaultTimeout, "with --policy-url: bound on one attempt of a call (a timed-out attempt is retried)")
	f.IntVar(&s.maxN, "policy-max-n", remote.DefaultMaxN, "with --policy-url: most samples asked of one call (n); 1 for servers that refuse n > 1, such as llama.cpp's")
}

// set reports whether --policy-url was given.
func (s *serverFlags) set() bool { return s.url != "" }

// check refuses a companion without --policy-url, and values out of range.
func (s *serverFlags) check(f *pflag.FlagSet) error {
	if !s.set() {
		for _, name := range []string{"policy-model", "policy-concurrency", "policy-timeout", "policy-max-n"} {
			if f.Changed(name) {
				return usageError{fmt.Errorf("--%s needs --policy-url", name)}
			}
		}
		return nil
	}
	switch {
	case s.model == "":
		return usageError{fmt.Errorf("--policy-url needs --policy-model NAME (the model the server serves)")}
	case s.concurrency < 1:
		return usageError{fmt.Errorf("--policy-concurrency %d: want at least 1", s.concurrency)}
	case s.timeout <= 0:
		return usageError{fmt.Errorf("--policy-timeout %s: want a positive duration such as 2m", s.timeout)}
	case s.maxN < 1:
		return usageError{fmt.Errorf("--policy-max-n %d: want at least 1", s.maxN)}
	}
	return nil
}

// config is the flags as a run stores them (no key).
func (s *serverFlags) config() *engine.PolicyServer {
	return &engine.PolicyServer{URL: s.url, Model: s.model, Concurrency: s.concurrency, Timeout: s.timeout, MaxN: s.maxN}
}

// policy is the server policy of the flags, its jitter seeded with seed.
func (s *serverFlags) policy(seed uint64) (*remote.Policy, error) {
	p, err := s.config().Policy(seed)
	if err != nil {
		return nil, usageError{fmt.Errorf("--policy-url: %w", err)}
	}
	return p, nil
}

// name is how reports name the policy.
func (s *serverFlags) name() string { return "server (" + s.model + " at " + s.url + ")" }

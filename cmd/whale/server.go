package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"whale/core/engine"
	"whale/core/remote"
	"whale/internal/readcap"
)

// serverFlags are --policy-url and its companions: an OpenAI-compatible
// server, or a pool of them, as the policy (core/remote), on eval, harness
// run and run; on run also a fleet's adapters folder for weight phases.
// The API key comes from the environment (remote.APIKeyEnv), never a flag.
type serverFlags struct {
	urls        []string
	urlsFile    string
	model       string
	concurrency int
	timeout     time.Duration
	maxN        int
	// fleet: whale run only (registerFleet).
	adapters, serverAdapters string
	syncEvery                int
}

func (s *serverFlags) register(f *pflag.FlagSet) {
	f.StringSliceVar(&s.urls, "policy-url", nil, "an OpenAI-compatible server as the policy, e.g. http://127.0.0.1:8000/v1 (API key, if any, in $"+remote.APIKeyEnv+"); repeat it (or give a comma-separated list) for a pool of replicas of one model")
	f.StringVar(&s.urlsFile, "policy-urls", "", "a file of server URLs, one a line (# starts a comment): a pool of replicas, with any --policy-url")
	f.StringVar(&s.model, "policy-model", "", "with --policy-url: the model name the servers serve")
	f.IntVar(&s.concurrency, "policy-concurrency", remote.DefaultConcurrency, "with --policy-url: HTTP calls in flight at once, per server")
	f.DurationVar(&s.timeout, "policy-timeout", remote.DefaultTimeout, "with --policy-url: bound on one attempt of a call (a timed-out attempt is retried)")
	f.IntVar(&s.maxN, "policy-max-n", remote.DefaultMaxN, "with --policy-url: most samples asked of one call (n); 1 for servers that refuse n > 1, such as llama.cpp's")
}

// registerFleet adds the flags of weight phases sampled by servers.
func (s *serverFlags) registerFleet(f *pflag.FlagSet) {
	f.StringVar(&s.adapters, "fleet-adapters", "", "with --policy-url and --lora-rank: a folder the servers share, where weight phases export each version of the adapters for the servers (vLLM) to load")
	f.StringVar(&s.serverAdapters, "fleet-server-adapters", "", "with --fleet-adapters: that folder's path as the servers see it (default: the same path)")
	f.IntVar(&s.syncEvery, "fleet-sync-every", 1, "with --fleet-adapters: weight steps between exports of the adapters (1: every step, every sample on-policy)")
}

// set reports whether --policy-url or --policy-urls was given.
func (s *serverFlags) set() bool { return len(s.urls) > 0 || s.urlsFile != "" }

// check refuses a companion without --policy-url, and values out of
// range; it reads --policy-urls into the URLs.
func (s *serverFlags) check(f *pflag.FlagSet) error {
	if !s.set() {
		for _, name := range []string{"policy-model", "policy-concurrency", "policy-timeout", "policy-max-n", "fleet-adapters", "fleet-server-adapters", "fleet-sync-every"} {
			if f.Lookup(name) != nil && f.Changed(name) {
				return usageError{fmt.Errorf("--%s needs --policy-url", name)}
			}
		}
		return nil
	}
	if s.urlsFile != "" {
		more, err := readURLs(s.urlsFile)
		if err != nil {
			return usageError{err}
		}
		s.urls = append(s.urls, more...)
		s.urlsFile = ""
	}
	seen := map[string]bool{}
	for _, u := range s.urls {
		k := strings.TrimRight(u, "/")
		if seen[k] {
			return usageError{fmt.Errorf("--policy-url %s is given twice", u)}
		}
		seen[k] = true
	}
	switch {
	case len(s.urls) == 0:
		return usageError{errors.New("--policy-urls: the file names no server")}
	case s.model == "":
		return usageError{fmt.Errorf("--policy-url needs --policy-model NAME (the model the server serves)")}
	case s.concurrency < 1:
		return usageError{fmt.Errorf("--policy-concurrency %d: want at least 1", s.concurrency)}
	case s.timeout <= 0:
		return usageError{fmt.Errorf("--policy-timeout %s: want a positive duration such as 2m", s.timeout)}
	case s.maxN < 1:
		return usageError{fmt.Errorf("--policy-max-n %d: want at least 1", s.maxN)}
	case s.adapters == "" && f.Lookup("fleet-adapters") != nil && (f.Changed("fleet-server-adapters") || f.Changed("fleet-sync-every")):
		return usageError{errors.New("--fleet-server-adapters and --fleet-sync-every need --fleet-adapters DIR")}
	case f.Lookup("fleet-sync-every") != nil && s.syncEvery < 1:
		return usageError{fmt.Errorf("--fleet-sync-every %d: want at least 1", s.syncEvery)}
	}
	return nil
}

// readURLs reads a --policy-urls file: one URL a line, blank lines and
// text after # ignored. An error names the file and line.
func readURLs(path string) ([]string, error) {
	b, err := readcap.File(path, readcap.JSON, "--policy-urls file")
	if err != nil {
		return nil, fmt.Errorf("--policy-urls: %w", err)
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for line := 1; sc.Scan(); line++ {
		text, _, _ := strings.Cut(sc.Text(), "#")
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		u, err := url.Parse(text)
		switch {
		case strings.ContainsAny(text, " \t,"):
			return nil, fmt.Errorf("%s:%d: %q: want one URL a line", path, line, text)
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			return nil, fmt.Errorf("%s:%d: %q is not an http(s) URL such as http://10.0.0.5:8000/v1", path, line, text)
		case u.User != nil:
			return nil, fmt.Errorf("%s:%d: the URL holds credentials: pass the key in $%s, never in the URL, which is stored with the run", path, line, remote.APIKeyEnv)
		}
		out = append(out, text)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("--policy-urls %s: %w", path, err)
	}
	return out, nil
}

// config is the flags as a run stores them (no key).
func (s *serverFlags) config() *engine.PolicyServer {
	ps := &engine.PolicyServer{URL: s.urls[0], Model: s.model, Concurrency: s.concurrency, Timeout: s.timeout, MaxN: s.maxN,
		Adapters: s.adapters, ServerAdapters: s.serverAdapters}
	if len(s.urls) > 1 {
		ps.URLs = s.urls
	}
	if s.adapters != "" && s.syncEvery > 1 {
		ps.SyncEvery = s.syncEvery
	}
	return ps
}

// policy is the servers of the flags as one policy, its jitter seeded
// with seed.
func (s *serverFlags) policy(seed uint64) (*remote.Pool, error) {
	p, err := s.config().Policy(seed)
	if err != nil {
		return nil, usageError{fmt.Errorf("--policy-url: %w", err)}
	}
	return p, nil
}

// name is how reports name the policy.
func (s *serverFlags) name() string {
	if len(s.urls) == 1 {
		return "server (" + s.model + " at " + s.urls[0] + ")"
	}
	return fmt.Sprintf("servers (%s at %d replicas: %s)", s.model, len(s.urls), strings.Join(s.urls, ", "))
}

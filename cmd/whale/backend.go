package main

import (
	"fmt"
	"strings"
	"sync"

	"github.com/spf13/pflag"

	"whale/kernels"
)

// The process's backend: the one every model a command loads runs on. A
// command with --backend opens it once before loading anything; without
// the flag it is the float32 CPU backend.
var processBackend struct {
	sync.Mutex
	be kernels.Backend
}

// runBackend returns the process's backend.
func runBackend() kernels.Backend {
	processBackend.Lock()
	defer processBackend.Unlock()
	if processBackend.be == nil {
		processBackend.be = kernels.NewCPU()
	}
	return processBackend.be
}

// backendFlag is --backend on the commands that run a model.
type backendFlag struct{ name string }

func (b *backendFlag) register(f *pflag.FlagSet) {
	f.StringVar(&b.name, "backend", "cpu", "where the model's ops run: "+backendChoices())
}

// open makes the flag's backend the process's; a backend this binary
// lacks (cuda without the build tag) or cannot start (no GPU) is a usage
// error with one sentence.
func (b *backendFlag) open() error {
	if b.name == "" || b.name == "cpu" {
		return nil
	}
	be, err := kernels.OpenBackend(b.name)
	if err != nil {
		return usageError{fmt.Errorf("--backend: %w", err)}
	}
	processBackend.Lock()
	defer processBackend.Unlock()
	processBackend.be = be
	return nil
}

// backendChoices names the backends of this binary for flag help.
func backendChoices() string {
	names := kernels.BackendNames()
	s := strings.Join(names, ", ")
	if len(names) == 1 {
		s += " (cuda needs a binary built with -tags cuda)"
	}
	return s
}

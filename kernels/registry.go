package kernels

import (
	"fmt"
	"slices"
	"sync"
)

// The backends a binary can open by name: "cpu" always, others when a
// build tag compiles them in (kernels/cuda registers "cuda" under the
// cuda tag).
var registry = struct {
	sync.Mutex
	open map[string]func() (Backend, error)
}{open: map[string]func() (Backend, error){"cpu": func() (Backend, error) { return NewCPU(), nil }}}

// RegisterBackend makes a backend openable by name (from an init func).
// Registering a name twice is a programmer error and panics.
func RegisterBackend(name string, open func() (Backend, error)) {
	registry.Lock()
	defer registry.Unlock()
	if _, ok := registry.open[name]; ok {
		panic("kernels: backend " + name + " registered twice")
	}
	registry.open[name] = open
}

// BackendNames lists the backends this binary can open, sorted.
func BackendNames() []string {
	registry.Lock()
	defer registry.Unlock()
	var names []string
	for n := range registry.open {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// OpenBackend opens the named backend ("" is "cpu"). A backend this
// binary was built without is an error that says how to get it.
func OpenBackend(name string) (Backend, error) {
	if name == "" {
		name = "cpu"
	}
	registry.Lock()
	open, ok := registry.open[name]
	registry.Unlock()
	switch {
	case ok:
		return open()
	case name == "cuda":
		return nil, fmt.Errorf("backend cuda: this whale was built without CUDA support (build it with -tags cuda against the CUDA headers; README, \"CUDA\")")
	default:
		return nil, fmt.Errorf("backend %q: unknown (this whale has %v)", name, BackendNames())
	}
}

// Syncer is a backend whose ops run asynchronously: Sync waits until every
// op queued so far has finished (timing needs it; the CPU backend runs
// each op to its end and is not one).
type Syncer interface {
	Sync() error
}

// Sync waits for be's queued ops if it is a Syncer; other backends have
// none queued.
func Sync(be Backend) error {
	if s, ok := be.(Syncer); ok {
		return s.Sync()
	}
	return nil
}

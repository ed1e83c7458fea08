package attach

// Run states as a reader should show them. The store keeps the status the
// owning process last wrote ("created", "running", "paused", "finished");
// a process that died or was stopped never gets to write anything else,
// so whether a run is running now comes from whether a live process runs
// it (Live), never from the stored word.
const (
	StateRunning  = "running"  // a live process runs it now
	StatePaused   = "paused"   // a live process holds it, paused
	StateStopped  = "stopped"  // no process runs it; 'whale resume' continues it
	StateFinished = "finished" // done; its summary is stored
)

// State is the run's state as shown by whale runs and whale show (see
// the State constants): finished from the store, running or paused only
// while a live process runs it, stopped otherwise.
func (r RunInfo) State() string {
	switch {
	case r.Status == "finished":
		return StateFinished
	case r.Live && r.Status == "paused":
		return StatePaused
	case r.Live:
		return StateRunning
	}
	return StateStopped
}

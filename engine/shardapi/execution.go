package shardapi

// Execution states.
const (
	// StateQueued: a run of a workflow under a concurrency limit waits
	// for a slot (its code has not run yet).
	StateQueued         = "QUEUED"
	StateRunning        = "RUNNING"
	StateCompleted      = "COMPLETED"
	StateFailed         = "FAILED"
	StateCancelled      = "CANCELLED"
	StateTimedOut       = "TIMED_OUT"
	StateTerminated     = "TERMINATED"
	StateContinuedAsNew = "CONTINUED_AS_NEW"
)

// IsTerminal reports whether a state is closed: neither running nor
// queued.
func IsTerminal(state string) bool { return state != StateRunning && state != StateQueued }

package shardapi

// Execution states.
const (
	StateRunning        = "RUNNING"
	StateCompleted      = "COMPLETED"
	StateFailed         = "FAILED"
	StateCancelled      = "CANCELLED"
	StateTimedOut       = "TIMED_OUT"
	StateTerminated     = "TERMINATED"
	StateContinuedAsNew = "CONTINUED_AS_NEW"
)

// IsTerminal reports whether a state is closed.
func IsTerminal(state string) bool { return state != StateRunning }

package shardapi

import "github.com/google/uuid"

// ResetRequest resets a run (the engine's Reset): ExecutionID names the
// run whose history is replayed (any run of a chain; the chain's current
// run is the one replaced), Point is "first", "last_task" or "" for
// EventID. The IdempotencyKey makes a retry answer the first reset's new
// run ("": every request resets again).
type ResetRequest struct {
	ExecutionID    uuid.UUID
	Point          string
	EventID        int64
	Reason         string
	IdempotencyKey string
}

// ResetResult is a reset's new run: the run it replays and the last event
// it copied, and the run it replaced (closed TERMINATED by the reset when
// Terminated). Newly is false when a retry found the first reset.
type ResetResult struct {
	ExecutionID uuid.UUID
	WorkflowID  string
	ResetFrom   uuid.UUID
	EventID     int64
	Replaced    uuid.UUID
	Terminated  bool
	Newly       bool
}

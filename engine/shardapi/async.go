package shardapi

import "github.com/google/uuid"

// AsyncAnswer is what an async completion, failure or heartbeat did.
type AsyncAnswer struct {
	ExecutionID uuid.UUID
	ActivityID  string
	Attempt     int
	// Duplicate: the attempt was answered the same way before; nothing
	// was appended.
	Duplicate bool
	// Retried: a failure the retry policy retries (a new attempt is due).
	Retried bool
	// CancelRequested: the workflow cancelled the activity (heartbeat).
	CancelRequested bool
}

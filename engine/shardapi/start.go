package shardapi

import (
	"fmt"

	"github.com/google/uuid"
)

// Callback is a completion callback: url receives a POST of the run's
// result when it closes, with headers added.
type Callback struct {
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
}

// StartResult is the outcome of a start.
type StartResult struct {
	ExecutionID  uuid.UUID
	WorkflowName string
	WorkflowID   string
	State        string
	// StartedFresh is true when this request created the run.
	StartedFresh bool
	// Deduplicated is true when the idempotency key was already claimed.
	Deduplicated bool
	// LatestExecutionID and LatestState are, in a replay of a run that
	// continued as new, the current run of its chain (zero otherwise).
	LatestExecutionID uuid.UUID
	LatestState       string
}

// MaxCallbacks bounds the completion callbacks of one run.
const MaxCallbacks = 8

// CallbackError refuses a completion callback URL (HTTP 422).
type CallbackError struct {
	URL    string
	Reason string
}

func (e *CallbackError) Error() string {
	return fmt.Sprintf("completion callback %q refused: %s", e.URL, e.Reason)
}

// AtomicError fails an atomic batch because of its Index-th start; Err
// says why (a ConflictError, a MovedError, a fresh check's error).
type AtomicError struct {
	Index int
	Err   error
}

func (e *AtomicError) Error() string {
	return fmt.Sprintf("start %d of the atomic batch: %v", e.Index, e.Err)
}

func (e *AtomicError) Unwrap() error { return e.Err }

// MaxAtomicStarts bounds the starts of one atomic batch.
const MaxAtomicStarts = 1000

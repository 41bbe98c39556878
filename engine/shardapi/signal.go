package shardapi

import (
	"encoding/json"

	"github.com/google/uuid"
)

// SignalRequest delivers a signal to a run.
type SignalRequest struct {
	ExecutionID uuid.UUID
	SignalName  string
	Payload     json.RawMessage
	// IdempotencyKey, when set, dedups on (the chain of ExecutionID,
	// IdempotencyKey): the scope of a run that never continued as new is
	// the run itself.
	IdempotencyKey string
}

// SignalResult is the outcome of a signal.
type SignalResult struct {
	// ExecutionID is the run the signal was delivered to: the addressed
	// one, or the current run of its chain when it continued as new.
	ExecutionID uuid.UUID
	// Delivered is false when the key had already been delivered.
	Delivered bool
}

// SignalWithStartResult is the outcome of a signal-with-start.
type SignalWithStartResult struct {
	ExecutionID     uuid.UUID
	WorkflowName    string
	WorkflowID      string
	State           string
	StartedFresh    bool
	SignalDelivered bool
}

// CloseResult is the outcome of a cancel or terminate.
type CloseResult struct {
	ExecutionID uuid.UUID
	State       string
	Reason      string
	// Newly is true when this request closed the run (terminate) or asked
	// it to cancel for the first time (cancel).
	Newly bool
	// CancelRequested is true when the run has a cancel request (cancel).
	CancelRequested bool
}

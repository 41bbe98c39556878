package shardapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/harvestd/harvest"
)

// RefusedError is a definite refusal an Outbound received from another
// node (a 4xx answer other than the ones with engine errors of their own).
type RefusedError struct {
	Status  int
	Code    string
	Message string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("refused (%d %s): %s", e.Status, e.Code, e.Message)
}

// IsDefinite reports whether err is a final answer to an outbox
// operation, not worth retrying.
func IsDefinite(err error) bool {
	var (
		terminal *TerminalError
		conflict *ConflictError
		refused  *RefusedError
	)
	return errors.Is(err, ErrNotFound) || errors.Is(err, ErrUnknownWorkflow) || errors.Is(err, ErrInvalidArgument) ||
		errors.Is(err, ErrTerminateNotAllowed) || errors.Is(err, harvest.ErrUnknownSignal) ||
		errors.Is(err, harvest.ErrInvalidPayload) ||
		errors.As(err, &terminal) || errors.As(err, &conflict) || errors.As(err, &refused)
}

// RunningHolder is the execution id of a workflow id's slot holder h
// (ok: one holds it) when it is running; an ErrNotFound otherwise.
func RunningHolder(workflowName, workflowID string, h SlotHolder, ok bool) (uuid.UUID, error) {
	if !ok || IsTerminal(h.State) {
		return uuid.Nil, fmt.Errorf("no running run of workflow %s id %q: %w", workflowName, workflowID, ErrNotFound)
	}
	return h.ExecutionID, nil
}

// OutboundStart is a keyed start the outbox fires on any shard (a
// child's start, a schedule's fire, a deferred item): the part of the
// engine's StartRequest that such a start sets. The engine's Outbound
// turns it into a StartRequest.
type OutboundStart struct {
	WorkflowName string
	WorkflowID   string
	Input        json.RawMessage
	// IdempotencyKey is the command's key: every attempt starts one run.
	IdempotencyKey string
	ReusePolicy    ReusePolicy
	ConflictPolicy ConflictPolicy
	// ExecutionTimeout and RunTimeout, when set, override the workflow's
	// default timeouts.
	ExecutionTimeout *time.Duration
	RunTimeout       *time.Duration
	// ConcurrencyKey, Priority, FairnessKey and FairnessWeight are the
	// start's flow control fields (a child's ChildOptions).
	ConcurrencyKey string
	Priority       int
	FairnessKey    string
	FairnessWeight int
}

package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/harvestd/harvest"
)

// Outbound performs the keyed operations of the outbox (outbox.go) on
// runs of any shard: a child's keyed start, a keyed signal, a cancel
// request, a terminate. A node implements it with its normal routing (a
// shard it serves is called directly, any other is reached over the
// authenticated node-to-node path); without one an engine performs them
// on itself, which serves a single-shard deployment (and harvesttest).
// Resolve is the one read: the running run of a workflow id, for a
// signal sent to a workflow id (harvest.SignalExternalWorkflow).
//
// A definite answer ends an outbox row: success, or an error for which
// IsDefinite is true (not found, closed, refused by policy or
// validation). Any other error (unreachable owner, a moving shard) is
// retried with backoff, with the same key.
type Outbound interface {
	Start(ctx context.Context, req StartRequest) (StartResult, error)
	Signal(ctx context.Context, req SignalRequest) (SignalResult, error)
	Cancel(ctx context.Context, id uuid.UUID, reason string) (CloseResult, error)
	Terminate(ctx context.Context, id uuid.UUID, reason string) (CloseResult, error)
	// Resolve returns the run that holds (workflowName, workflowID) and is
	// running, wherever it is placed; an error wrapping ErrNotFound when
	// none is.
	Resolve(ctx context.Context, workflowName, workflowID string) (uuid.UUID, error)
}

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

// selfOutbound performs every operation on the engine itself.
type selfOutbound struct{ e *Engine }

var _ Outbound = selfOutbound{}

func (s selfOutbound) Start(ctx context.Context, req StartRequest) (StartResult, error) {
	if req.IdempotencyKey != "" {
		if res, ok, err := s.e.LookupStartKey(ctx, req.WorkflowName, req.IdempotencyKey); err != nil || ok {
			return res, err
		}
		req.Probed = true
	}
	return s.e.StartWorkflow(ctx, req)
}

func (s selfOutbound) Signal(ctx context.Context, req SignalRequest) (SignalResult, error) {
	if ShardOf(req.ExecutionID) != s.e.cfg.ShardID {
		return SignalResult{}, fmt.Errorf("execution %s is on shard %d, this single-shard engine is %d: %w",
			req.ExecutionID, ShardOf(req.ExecutionID), s.e.cfg.ShardID, ErrNotFound)
	}
	return s.e.Signal(ctx, req)
}

func (s selfOutbound) Cancel(ctx context.Context, id uuid.UUID, reason string) (CloseResult, error) {
	return s.e.Cancel(ctx, id, reason)
}

func (s selfOutbound) Terminate(ctx context.Context, id uuid.UUID, reason string) (CloseResult, error) {
	return s.e.Terminate(ctx, id, reason)
}

func (s selfOutbound) Resolve(ctx context.Context, workflowName, workflowID string) (uuid.UUID, error) {
	h, ok, err := s.e.LookupWorkflowID(ctx, workflowName, workflowID)
	if err != nil {
		return uuid.Nil, err
	}
	return RunningHolder(workflowName, workflowID, h, ok)
}

// RunningHolder is the execution id of a workflow id's slot holder h
// (ok: one holds it) when it is running; an ErrNotFound otherwise.
func RunningHolder(workflowName, workflowID string, h SlotHolder, ok bool) (uuid.UUID, error) {
	if !ok || h.State != StateRunning {
		return uuid.Nil, fmt.Errorf("no running run of workflow %s id %q: %w", workflowName, workflowID, ErrNotFound)
	}
	return h.ExecutionID, nil
}

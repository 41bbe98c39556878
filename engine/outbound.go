package engine

import (
	"context"
	"fmt"

	"github.com/google/uuid"
)

// Outbound performs the keyed operations of the outbox (internal/outbox) on
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
	// List lists a page of the runs of every shard (a batch job's,
	// internal/batchop): an error when a shard could not be read.
	List(ctx context.Context, q ListQuery) (ListPage, error)
	// Reset resets a run (a batch job's reset item): its key makes a
	// retry answer the first reset.
	Reset(ctx context.Context, req ResetRequest) (ResetResult, error)
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

func (s selfOutbound) List(ctx context.Context, q ListQuery) (ListPage, error) {
	return s.e.List(ctx, q)
}

func (s selfOutbound) Reset(ctx context.Context, req ResetRequest) (ResetResult, error) {
	return s.e.Reset(ctx, req)
}

func (s selfOutbound) Resolve(ctx context.Context, workflowName, workflowID string) (uuid.UUID, error) {
	h, ok, err := s.e.LookupWorkflowID(ctx, workflowName, workflowID)
	if err != nil {
		return uuid.Nil, err
	}
	return RunningHolder(workflowName, workflowID, h, ok)
}

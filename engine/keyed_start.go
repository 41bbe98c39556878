package engine

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest/engine/internal/store"
)

// keyedStart is a kind whose row fires a keyed start (the row's command
// id is the key) on behalf of no run and records how it ended in a table
// of its own: a schedule's fire (schedule_outbox.go), a deferred item
// (deferred_outbox.go). T is its rows' request.
type keyedStart[T any] struct {
	// start is the start a request fires (its key is set here).
	start func(d T) StartRequest
	// refused is the policy for a refused start: its final answer, or
	// nil to retry the start.
	refused func(d T, err error) *fireAnswer
	// queue queues the UPDATE that records an answer in the kind's
	// table, by the row's command id.
	queue func(b *pgx.Batch, key, outcome, reason, executionID string)
	// started and failed are the outcomes recorded for a start that went
	// through and for a request that cannot be decoded.
	started, failed string
}

// fireAnswer is how a keyed start ended.
type fireAnswer struct {
	outcome     string // the kind's started or failed, or fireSkipped
	reason      string
	executionID string
}

// perform decodes the row's request, fires its keyed start and sorts
// the answer into a final one or a retry.
func (k keyedStart[T]) perform(ctx context.Context, e *Engine, r store.OutboxRow) outboxAnswer {
	d, err := decodeRequest[T](r)
	if err != nil {
		return outboxAnswer{row: r, answer: err, fire: &fireAnswer{outcome: k.failed, reason: err.Error()}}
	}
	req := k.start(d)
	req.IdempotencyKey = r.CommandID
	res, err := e.cfg.Outbound.Start(ctx, req)
	if err == nil {
		return outboxAnswer{row: r, fire: &fireAnswer{outcome: k.started, executionID: res.ExecutionID.String()}}
	}
	if f := k.refused(d, err); f != nil {
		return outboxAnswer{row: r, answer: err, fire: f}
	}
	return outboxAnswer{row: r, retry: err}
}

// record queues the answer's record in the kind's table; ex is unused
// (the row belongs to no run).
func (k keyedStart[T]) record(b *pgx.Batch, _ *store.Exec, a outboxAnswer) error {
	if f := a.fire; f != nil {
		k.queue(b, a.row.CommandID, f.outcome, f.reason, f.executionID)
	}
	return nil
}

package engine

import (
	"context"
	"errors"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/store"
)

// outboxDeferredStart is a deferred item's fire (deferred_loop.go): a
// keyed start (DeferredKey) of the item's workflow. Its row belongs to no
// run (execution id zero, command id the key); its answer is recorded in
// the item. An admission gate holds the start back (it is retried until
// the gate opens); any other definite refusal (an input the workflow's
// schema refuses among them) fails the item.
// Its request is a store.DeferredFire.
const outboxDeferredStart = "deferred_start"

// performDeferredStart performs an item's keyed start.
func (e *Engine) performDeferredStart(ctx context.Context, r store.OutboxRow) outboxAnswer {
	d, err := decodeRequest[store.DeferredFire](r)
	if err != nil {
		return outboxAnswer{row: r, answer: err, fire: &fireAnswer{outcome: DeferredFailed, reason: err.Error()}}
	}
	input := d.Input
	if string(input) == "null" {
		input = nil
	}
	res, err := e.cfg.Outbound.Start(ctx, StartRequest{WorkflowName: d.WorkflowName, WorkflowID: d.WorkflowID,
		Input: input, IdempotencyKey: r.CommandID})
	if err == nil {
		return outboxAnswer{row: r, fire: &fireAnswer{outcome: DeferredStarted, executionID: res.ExecutionID.String()}}
	}
	var (
		gate   *GateError
		schema *harvest.InputError
	)
	if errors.As(err, &schema) || !errors.As(err, &gate) && IsDefinite(err) {
		return outboxAnswer{row: r, answer: err, fire: &fireAnswer{outcome: DeferredFailed, reason: err.Error()}}
	}
	return outboxAnswer{row: r, retry: err}
}

// queueDeferredRecord records a fire's answer in its item.
func queueDeferredRecord(b *pgx.Batch, a outboxAnswer) {
	f := a.fire
	if f == nil {
		return
	}
	id, err := uuid.Parse(strings.TrimPrefix(a.row.CommandID, DeferredKeyPrefix))
	if err != nil {
		return
	}
	store.QueueDeferredOutcome(b, id, f.outcome, f.reason, f.executionID)
}

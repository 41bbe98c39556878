package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// DeferredFire is a deferred item closed for firing: the keyed start its
// outbox row performs (the row's request, as JSON).
type DeferredFire struct {
	DeferredID   uuid.UUID       `json:"deferred_id"`
	Policy       string          `json:"policy"`
	WorkflowName string          `json:"workflow_name"`
	WorkflowID   string          `json:"workflow_id,omitempty"`
	Input        json.RawMessage `json:"input,omitempty"`
}

// deferredDue is the read-only look before a fire: most polls of a shard
// find nothing due, and then cost one indexed read.
const deferredDue = `SELECT EXISTS (SELECT 1 FROM harvest_deferred WHERE state = 'pending' AND fire_at <= $1)`

// DeferredDue reports whether a pending item is due at now.
func DeferredDue(ctx context.Context, q Querier, now time.Time) (bool, error) {
	var due bool
	err := q.QueryRow(ctx, deferredDue, now).Scan(&due)
	return due, err
}

// CloseDueDeferred closes up to limit items due at now that a concurrent
// start is not joining right now (those fire in the next pass), and
// returns their starts.
func CloseDueDeferred(ctx context.Context, q Querier, now time.Time, limit int) ([]DeferredFire, error) {
	rows, err := q.Query(ctx, `
		WITH due AS (SELECT deferred_id FROM harvest_deferred WHERE state = 'pending' AND fire_at <= $1
		              ORDER BY fire_at LIMIT $2 FOR UPDATE SKIP LOCKED)
		UPDATE harvest_deferred d SET state = 'firing', open = false, fired_at = $1, updated_at = $1
		  FROM due WHERE d.deferred_id = due.deferred_id
		RETURNING d.deferred_id, d.policy, d.workflow_name, d.workflow_id, coalesce(d.input, 'null'::jsonb)`, now, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (DeferredFire, error) {
		var f DeferredFire
		var input []byte
		err := r.Scan(&f.DeferredID, &f.Policy, &f.WorkflowName, &f.WorkflowID, &input)
		f.Input = json.RawMessage(input)
		return f, err
	})
}

// NextDeferred is when the earliest pending item is due (nil: none).
func NextDeferred(ctx context.Context, q Querier) (*time.Time, error) {
	var next *time.Time
	err := q.QueryRow(ctx, `SELECT min(fire_at) FROM harvest_deferred WHERE state = 'pending'`).Scan(&next)
	return next, err
}

// QueueDeferredOutcome queues the record of an item's fire: its state
// (outcome), why, and the run it started (executionID, "" for none).
func QueueDeferredOutcome(b *pgx.Batch, id uuid.UUID, outcome, reason, executionID string) {
	b.Queue(`
		UPDATE harvest_deferred SET state = $2, reason = $3, execution_id = nullif($4, '')::uuid, updated_at = now()
		 WHERE deferred_id = $1`, id, outcome, reason, executionID)
}

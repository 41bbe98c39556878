package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest/engine/shardapi"
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

// The request's side (internal/deferred/starts.go): a deferred start joins its key's
// open debounce or batch item, or opens one; a throttled start takes its
// key's next slot under the lock of the key's pace row
// (harvest_deferred_throttle).

// deferredColumns are the columns scanDeferred reads.
const deferredColumns = `deferred_id, policy, workflow_name, policy_key, state, workflow_id, starts, first_at, fire_at,
	fired_at, coalesce(execution_id::text, ''), reason, updated_at`

// scanDeferred scans an item's deferredColumns.
func scanDeferred(row pgx.Row) (shardapi.Deferred, error) {
	var d shardapi.Deferred
	err := row.Scan(&d.ID, &d.Policy, &d.WorkflowName, &d.Key, &d.State, &d.WorkflowID, &d.Starts, &d.FirstAt, &d.FireAt,
		&d.FiredAt, &d.ExecutionID, &d.Reason, &d.UpdatedAt)
	return d, err
}

// jsonArg is an input as a jsonb argument: NULL when absent.
func jsonArg(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	return string(raw)
}

// upsertDebounce joins the key's open debounce item (last input and
// workflow id win; the item fires window after this start, never after
// its deadline) or opens one.
const upsertDebounce = `
	INSERT INTO harvest_deferred AS d (deferred_id, policy, workflow_name, policy_key, open, workflow_id, input,
	       first_at, fire_at, deadline_at, updated_at)
	VALUES ($1, 'debounce', $2, $3, true, $4, $5::jsonb, $6::timestamptz,
	       least($6::timestamptz + $7::bigint * interval '1 microsecond', $6::timestamptz + $8::bigint * interval '1 microsecond'), $6::timestamptz + $8::bigint * interval '1 microsecond', $6::timestamptz)
	ON CONFLICT (policy, workflow_name, policy_key) WHERE open DO UPDATE
	   SET input = excluded.input, workflow_id = excluded.workflow_id, starts = d.starts + 1,
	       fire_at = least($6::timestamptz + $7::bigint * interval '1 microsecond', d.deadline_at), updated_at = $6::timestamptz
	RETURNING ` + deferredColumns

// Debounce joins, at now, workflow name's open debounce item of key (see
// upsertDebounce; window and maxWait in microseconds), or opens it as
// item id, and returns the item.
func Debounce(ctx context.Context, q Querier, id uuid.UUID, name, key, workflowID string, input json.RawMessage,
	now time.Time, window, maxWait int64) (shardapi.Deferred, error) {
	return scanDeferred(q.QueryRow(ctx, upsertDebounce, id, name, key, workflowID, jsonArg(input), now, window, maxWait))
}

// upsertBatch appends the input to the key's open batch (the batch
// closes, due at once, when it is full) or opens one. It appends nothing,
// and returns no row, when the input would take the open batch past $9
// bytes (closeBatch).
const upsertBatch = `
	INSERT INTO harvest_deferred AS d (deferred_id, policy, workflow_name, policy_key, open, input, max_size,
	       first_at, fire_at, deadline_at, updated_at, input_bytes)
	VALUES ($1, 'batch', $2, $3, $5::int > 1, jsonb_build_array($4::jsonb), $5, $6::timestamptz,
	       CASE WHEN $5::int > 1 THEN $6::timestamptz + $7::bigint * interval '1 microsecond' ELSE $6::timestamptz END,
	       $6::timestamptz + $7::bigint * interval '1 microsecond', $6::timestamptz, $8)
	ON CONFLICT (policy, workflow_name, policy_key) WHERE open DO UPDATE
	   SET input = d.input || excluded.input, starts = d.starts + 1, open = d.starts + 1 < d.max_size,
	       fire_at = CASE WHEN d.starts + 1 >= d.max_size THEN $6::timestamptz ELSE d.fire_at END, updated_at = $6::timestamptz,
	       input_bytes = d.input_bytes + excluded.input_bytes
	 WHERE d.input_bytes + excluded.input_bytes <= $9
	RETURNING ` + deferredColumns

// AppendBatch appends, at now, input (size bytes of JSON) to workflow
// name's open batch of key, or opens it as item id (see upsertBatch;
// maxWait in microseconds), and returns the item; pgx.ErrNoRows when
// the input would take the open batch past maxBytes.
func AppendBatch(ctx context.Context, q Querier, id uuid.UUID, name, key string, input json.RawMessage, maxSize int,
	now time.Time, maxWait, size, maxBytes int64) (shardapi.Deferred, error) {
	return scanDeferred(q.QueryRow(ctx, upsertBatch, id, name, key, jsonArg(input), maxSize, now, maxWait, size, maxBytes))
}

// closeBatch closes the key's open batch, due at once: the next start's
// input would take it past its bytes.
const closeBatch = `
	UPDATE harvest_deferred SET open = false, fire_at = $3, updated_at = $3
	 WHERE policy = 'batch' AND workflow_name = $1 AND policy_key = $2 AND open`

// CloseBatch closes workflow name's open batch of key, due at now.
func CloseBatch(ctx context.Context, q Querier, name, key string, now time.Time) error {
	_, err := q.Exec(ctx, closeBatch, name, key, now)
	return err
}

// LockThrottle locks the pace row of workflow name's throttle key
// (inserted, its next slot at now, when there is none) and returns the
// key's next slot.
func LockThrottle(ctx context.Context, q Querier, name, key string, now time.Time) (time.Time, error) {
	var next time.Time
	err := q.QueryRow(ctx, `
		INSERT INTO harvest_deferred_throttle AS t (workflow_name, throttle_key, next_at) VALUES ($1, $2, $3)
		ON CONFLICT (workflow_name, throttle_key) DO UPDATE SET next_at = t.next_at
		RETURNING next_at`, name, key, now).Scan(&next)
	return next, err
}

// ThrottleBacklog counts the pending items of workflow name's throttle
// key and reads when the earliest is due (nil: none).
func ThrottleBacklog(ctx context.Context, q Querier, name, key string) (backlog int, earliest *time.Time, err error) {
	err = q.QueryRow(ctx, `SELECT count(*), min(fire_at) FROM harvest_deferred
		 WHERE policy = 'throttle' AND workflow_name = $1 AND policy_key = $2 AND state = 'pending'`,
		name, key).Scan(&backlog, &earliest)
	return backlog, earliest, err
}

// InsertThrottled inserts throttled item id of workflow name's key,
// started at now, due at slot, and returns it.
func InsertThrottled(ctx context.Context, q Querier, id uuid.UUID, name, key, workflowID string, input json.RawMessage,
	now, slot time.Time) (shardapi.Deferred, error) {
	return scanDeferred(q.QueryRow(ctx, `
		INSERT INTO harvest_deferred (deferred_id, policy, workflow_name, policy_key, open, workflow_id, input,
		       first_at, fire_at, deadline_at, updated_at)
		VALUES ($1, 'throttle', $2, $3, false, $4, $5::jsonb, $6, $7, $7, $6)
		RETURNING `+deferredColumns, id, name, key, workflowID, jsonArg(input), now, slot))
}

// PaceThrottle sets the next slot of workflow name's throttle key.
func PaceThrottle(ctx context.Context, q Querier, name, key string, next time.Time) error {
	_, err := q.Exec(ctx, `UPDATE harvest_deferred_throttle SET next_at = $3 WHERE workflow_name = $1 AND throttle_key = $2`,
		name, key, next)
	return err
}

// ReadDeferred reads item id; pgx.ErrNoRows when there is none.
func ReadDeferred(ctx context.Context, q Querier, id uuid.UUID) (shardapi.Deferred, error) {
	return scanDeferred(q.QueryRow(ctx, `SELECT `+deferredColumns+` FROM harvest_deferred WHERE deferred_id = $1`, id))
}

// ListDeferred reads up to limit items pending or firing, the soonest
// due first.
func ListDeferred(ctx context.Context, q Querier, limit int) ([]shardapi.Deferred, error) {
	rows, err := q.Query(ctx, `SELECT `+deferredColumns+` FROM harvest_deferred
		 WHERE state IN ('pending', 'firing') ORDER BY fire_at, deferred_id LIMIT $1`, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (shardapi.Deferred, error) { return scanDeferred(r) })
}

package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest/engine/internal/fence"
)

// Deferred starts (migration 017, docs/http-api.md): a start under a
// throttle, debounce or batch policy is not started by its request. The
// request's transaction records it in the shard of its policy key (the
// caller places it there) and answers its deferred id; the shard's fire
// loop (deferred_loop.go) later closes the item and records its keyed
// start (DeferredKey) as an outbox row in one fenced transaction, and the
// outbox performs it (deferred_outbox.go). A crash anywhere in between
// fires the item once: the intent is durable before the 202, the close
// and the outbox row commit together, and the key dedups a start the
// outbox performs twice. This file holds the request's side (the
// policies are shardapi's: shardapi.DeferRequest).

// Limits of the engine's deferred starts.
const (
	// maxDeferWait bounds every window, wait and pace.
	maxDeferWait = 7 * 24 * time.Hour
	// listDeferredLimit bounds ListDeferred.
	listDeferredLimit = 1000
)

// Defer records a deferred start and answers its item: the key's open
// debounce or batch item it joined, or a new one.
func (e *Engine) Defer(ctx context.Context, req DeferRequest) (Deferred, error) {
	if err := e.checkOwning(); err != nil {
		return Deferred{}, err
	}
	policy, err := e.checkDefer(&req)
	if err != nil {
		return Deferred{}, err
	}
	now := e.now().UTC()
	var (
		d      Deferred
		closed bool
	)
	err = e.withTx(ctx, func(tx *fence.Tx) error {
		switch policy {
		case PolicyDebounce:
			d, err = debounce(ctx, tx, e.cfg.ShardID, req, now)
		case PolicyBatch:
			d, closed, err = batch(ctx, tx, e.cfg.ShardID, req, now, e.cfg.BatchInputBytes, e.cfg.batchClosedHook)
		default:
			d, err = throttle(ctx, tx, e.cfg.ShardID, req, now)
		}
		return err
	})
	if err != nil {
		return Deferred{}, err
	}
	if closed {
		e.armDeferred(now)
	}
	e.armDeferred(d.FireAt)
	return d, nil
}

// checkDefer validates req, fills its defaults and names its policy.
func (e *Engine) checkDefer(req *DeferRequest) (string, error) {
	set := 0
	for _, p := range []bool{req.Debounce != nil, req.Batch != nil, req.Throttle != nil} {
		if p {
			set++
		}
	}
	if set != 1 {
		return "", fmt.Errorf("a deferred start takes exactly one of throttle, debounce and batch: %w", ErrInvalidArgument)
	}
	if !e.reg.HasWorkflow(req.WorkflowName) {
		return "", fmt.Errorf("workflow %q: %w", req.WorkflowName, ErrUnknownWorkflow)
	}
	if len(req.Input) > 0 && !json.Valid(req.Input) {
		return "", fmt.Errorf("input is not JSON: %w", ErrInvalidArgument)
	}
	switch {
	case req.Debounce != nil:
		return PolicyDebounce, checkDebounce(req.Debounce)
	case req.Batch != nil:
		if req.WorkflowID != "" {
			return "", fmt.Errorf("a batch start takes no workflow_id: its run gathers many starts: %w", ErrInvalidArgument)
		}
		return PolicyBatch, checkBatch(req.Batch)
	}
	return PolicyThrottle, checkThrottle(req.Throttle)
}

func checkDebounce(d *Debounce) error {
	if d.MaxWait == 0 {
		d.MaxWait = DebounceMaxWaitDefault
	}
	if err := checkPolicyKey("debounce.key", d.Key); err != nil {
		return err
	}
	if err := checkWait("debounce.window", d.Window); err != nil {
		return err
	}
	return checkWait("debounce.max_wait", d.MaxWait)
}

func checkBatch(b *Batch) error {
	if b.MaxSize == 0 {
		b.MaxSize = BatchMaxSizeDefault
	}
	if b.MaxWait == 0 {
		b.MaxWait = BatchMaxWaitDefault
	}
	if err := checkPolicyKey("batch_key", b.Key); err != nil {
		return err
	}
	if b.MaxSize < 1 || b.MaxSize > MaxBatchSize {
		return fmt.Errorf("batch_max_size %d: want 1 to %d: %w", b.MaxSize, MaxBatchSize, ErrInvalidArgument)
	}
	return checkWait("batch_max_wait", b.MaxWait)
}

func checkThrottle(t *Throttle) error {
	if t.Per == 0 {
		t.Per = time.Second
	}
	if t.MaxBacklog == 0 {
		t.MaxBacklog = ThrottleBacklogDefault
	}
	if err := checkPolicyKey("throttle.key", t.Key); err != nil {
		return err
	}
	if err := checkWait("throttle.per", t.Per); err != nil {
		return err
	}
	if t.Rate < 1 || t.Per/time.Duration(t.Rate) < time.Microsecond {
		return fmt.Errorf("throttle.rate %d per %s: want at least 1, at most one start a microsecond: %w", t.Rate, t.Per, ErrInvalidArgument)
	}
	if t.MaxBacklog < 1 || t.MaxBacklog > MaxThrottleBacklog {
		return fmt.Errorf("throttle.max_backlog %d: want 1 to %d: %w", t.MaxBacklog, MaxThrottleBacklog, ErrInvalidArgument)
	}
	return nil
}

func checkPolicyKey(field, key string) error {
	if key == "" || len(key) > 1024 {
		return fmt.Errorf("%s: want 1 to 1024 bytes: %w", field, ErrInvalidArgument)
	}
	return nil
}

func checkWait(field string, d time.Duration) error {
	if d <= 0 || d > maxDeferWait {
		return fmt.Errorf("%s %s: want more than 0, at most %s: %w", field, d, maxDeferWait, ErrInvalidArgument)
	}
	return nil
}

// deferredColumns are the columns scanDeferred reads.
const deferredColumns = `deferred_id, policy, workflow_name, policy_key, state, workflow_id, starts, first_at, fire_at,
	fired_at, coalesce(execution_id::text, ''), reason, updated_at`

func scanDeferred(row pgx.Row) (Deferred, error) {
	var d Deferred
	err := row.Scan(&d.ID, &d.Policy, &d.WorkflowName, &d.Key, &d.State, &d.WorkflowID, &d.Starts, &d.FirstAt, &d.FireAt,
		&d.FiredAt, &d.ExecutionID, &d.Reason, &d.UpdatedAt)
	return d, err
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

func debounce(ctx context.Context, tx *fence.Tx, shard uint16, req DeferRequest, now time.Time) (Deferred, error) {
	p := req.Debounce
	d, err := scanDeferred(tx.QueryRow(ctx, upsertDebounce, NewExecutionID(shard), req.WorkflowName, p.Key, req.WorkflowID,
		jsonArg(req.Input), now, micros(p.Window), micros(p.MaxWait)))
	if err != nil {
		return d, fmt.Errorf("debounce %q: %w", p.Key, translate(err))
	}
	return d, nil
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

// batchCloseTries bounds the batches one start closes to make room.
const batchCloseTries = 4

// closeBatch closes the key's open batch, due at once: the next start's
// input would take it past its bytes.
const closeBatch = `
	UPDATE harvest_deferred SET open = false, fire_at = $3, updated_at = $3
	 WHERE policy = 'batch' AND workflow_name = $1 AND policy_key = $2 AND open`

// batch appends the start to its key's open batch, or opens one; closed
// reports that it closed a full batch (due at once) to make room.
// afterClose, when set (tests), runs after each close.
func batch(ctx context.Context, tx *fence.Tx, shard uint16, req DeferRequest, now time.Time, maxBytes int64,
	afterClose func(context.Context, *fence.Tx) error) (d Deferred, closed bool, err error) {
	p := req.Batch
	input := jsonArg(req.Input)
	size := int64(len(inputOrNull(req.Input)))
	for try := 1; ; try++ {
		d, err = scanDeferred(tx.QueryRow(ctx, upsertBatch, NewExecutionID(shard), req.WorkflowName, p.Key,
			input, p.MaxSize, now, micros(p.MaxWait), size, maxBytes))
		if !errors.Is(err, pgx.ErrNoRows) {
			break
		}
		if try == batchCloseTries {
			// Concurrent starts filled each batch this one opened room in.
			return d, closed, fmt.Errorf("batch %q: its batches fill faster than they close: %w", p.Key, ErrUnavailable)
		}
		if _, err = tx.Exec(ctx, closeBatch, req.WorkflowName, p.Key, now); err != nil {
			break
		}
		closed = true
		if afterClose != nil {
			if err = afterClose(ctx, tx); err != nil {
				break
			}
		}
	}
	if err != nil {
		return d, closed, fmt.Errorf("batch %q: %w", p.Key, translate(err))
	}
	return d, closed, nil
}

// throttle hands the start its key's next slot, under the lock of the
// key's pace row, unless the key's backlog is full.
func throttle(ctx context.Context, tx *fence.Tx, shard uint16, req DeferRequest, now time.Time) (Deferred, error) {
	p := req.Throttle
	var next time.Time
	err := tx.QueryRow(ctx, `
		INSERT INTO harvest_deferred_throttle AS t (workflow_name, throttle_key, next_at) VALUES ($1, $2, $3)
		ON CONFLICT (workflow_name, throttle_key) DO UPDATE SET next_at = t.next_at
		RETURNING next_at`, req.WorkflowName, p.Key, now).Scan(&next)
	if err != nil {
		return Deferred{}, fmt.Errorf("lock throttle %q: %w", p.Key, translate(err))
	}
	var (
		backlog  int
		earliest *time.Time
	)
	err = tx.QueryRow(ctx, `SELECT count(*), min(fire_at) FROM harvest_deferred
		 WHERE policy = 'throttle' AND workflow_name = $1 AND policy_key = $2 AND state = 'pending'`,
		req.WorkflowName, p.Key).Scan(&backlog, &earliest)
	if err != nil {
		return Deferred{}, fmt.Errorf("count throttle %q: %w", p.Key, translate(err))
	}
	if backlog >= p.MaxBacklog {
		return Deferred{}, &ThrottledError{Key: p.Key, Backlog: backlog, RetryAfter: retryAfter(earliest, now)}
	}
	slot := now
	if next.After(now) {
		slot = next
	}
	d, err := scanDeferred(tx.QueryRow(ctx, `
		INSERT INTO harvest_deferred (deferred_id, policy, workflow_name, policy_key, open, workflow_id, input,
		       first_at, fire_at, deadline_at, updated_at)
		VALUES ($1, 'throttle', $2, $3, false, $4, $5::jsonb, $6, $7, $7, $6)
		RETURNING `+deferredColumns, NewExecutionID(shard), req.WorkflowName, p.Key, req.WorkflowID, jsonArg(req.Input), now, slot))
	if err != nil {
		return d, fmt.Errorf("throttle %q: %w", p.Key, translate(err))
	}
	_, err = tx.Exec(ctx, `UPDATE harvest_deferred_throttle SET next_at = $3 WHERE workflow_name = $1 AND throttle_key = $2`,
		req.WorkflowName, p.Key, slot.Add(p.Per/time.Duration(p.Rate)))
	if err != nil {
		return d, fmt.Errorf("pace throttle %q: %w", p.Key, translate(err))
	}
	return d, nil
}

// retryAfter is how long until the earliest waiting start fires, in
// whole seconds, at least one.
func retryAfter(earliest *time.Time, now time.Time) time.Duration {
	if earliest == nil {
		return time.Second
	}
	secs := math.Ceil(earliest.Sub(now).Seconds())
	return time.Duration(max(secs, 1)) * time.Second
}

// jsonArg is an input as a jsonb argument: NULL when absent.
func jsonArg(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	return string(raw)
}

// GetDeferred reads one deferred item; ErrNotFound when there is none.
func (e *Engine) GetDeferred(ctx context.Context, id uuid.UUID) (Deferred, error) {
	d, err := scanDeferred(e.pool.QueryRow(ctx, `SELECT `+deferredColumns+` FROM harvest_deferred WHERE deferred_id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return d, &NotFoundError{What: "deferred item", ID: id.String()}
	}
	if err != nil {
		return d, fmt.Errorf("read deferred %s: %w", id, translate(err))
	}
	return d, nil
}

// ListDeferred lists the items not fired or not started yet (pending or
// firing), the soonest first, at most listDeferredLimit.
func (e *Engine) ListDeferred(ctx context.Context) ([]Deferred, error) {
	rows, err := e.pool.Query(ctx, `SELECT `+deferredColumns+` FROM harvest_deferred
		 WHERE state IN ('pending', 'firing') ORDER BY fire_at, deferred_id LIMIT $1`, listDeferredLimit)
	if err != nil {
		return nil, fmt.Errorf("list deferred: %w", translate(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Deferred, error) { return scanDeferred(r) })
	if err != nil {
		return nil, fmt.Errorf("list deferred: %w", translate(err))
	}
	return out, nil
}

package deferred

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
	"github.com/harvestd/harvest/engine/internal/runs"
	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
)

// Deferred starts (migration 017, docs/http-api.md): a start under a
// throttle, debounce or batch policy is not started by its request. The
// request's transaction records it in the shard of its policy key (the
// caller places it there) and answers its deferred id; the shard's fire
// loop (loop.go) later closes the item and records its keyed start
// (shardapi.DeferredKey) as an outbox row in one fenced transaction, and
// the outbox performs it (outbox.go). A crash anywhere in between fires
// the item once: the intent is durable before the 202, the close
// and the outbox row commit together, and the key dedups a start the
// outbox performs twice. This file holds the request's side (the
// policies are shardapi's: shardapi.DeferRequest).

// Limits of the engine's deferred starts.
const (
	// maxDeferWait bounds every window, wait and pace.
	maxDeferWait = 7 * 24 * time.Hour
	// listDeferredLimit bounds List.
	listDeferredLimit = 1000
)

// Defer records a deferred start and answers its item: the key's open
// debounce or batch item it joined, or a new one.
func (x *Starts) Defer(ctx context.Context, req shardapi.DeferRequest) (shardapi.Deferred, error) {
	if err := x.d.Fence.CheckOwning(); err != nil {
		return shardapi.Deferred{}, err
	}
	policy, err := x.checkDefer(&req)
	if err != nil {
		return shardapi.Deferred{}, err
	}
	now := x.d.Now().UTC()
	var (
		d      shardapi.Deferred
		closed bool
	)
	err = x.d.Fence.Do(ctx, func(tx *fence.Tx) error {
		switch policy {
		case shardapi.PolicyDebounce:
			d, err = debounce(ctx, tx, x.d.ShardID, req, now)
		case shardapi.PolicyBatch:
			d, closed, err = batch(ctx, tx, x.d.ShardID, req, now, x.d.BatchInputBytes, x.d.AfterClose)
		default:
			d, err = throttle(ctx, tx, x.d.ShardID, req, now)
		}
		return err
	})
	if err != nil {
		return shardapi.Deferred{}, err
	}
	if closed {
		x.armDeferred(now)
	}
	x.armDeferred(d.FireAt)
	return d, nil
}

// checkDefer validates req, fills its defaults and names its policy.
func (x *Starts) checkDefer(req *shardapi.DeferRequest) (string, error) {
	set := 0
	for _, p := range []bool{req.Debounce != nil, req.Batch != nil, req.Throttle != nil} {
		if p {
			set++
		}
	}
	if set != 1 {
		return "", fmt.Errorf("a deferred start takes exactly one of throttle, debounce and batch: %w", shardapi.ErrInvalidArgument)
	}
	if !x.d.HasWorkflow(req.WorkflowName) {
		return "", fmt.Errorf("workflow %q: %w", req.WorkflowName, shardapi.ErrUnknownWorkflow)
	}
	if len(req.Input) > 0 && !json.Valid(req.Input) {
		return "", fmt.Errorf("input is not JSON: %w", shardapi.ErrInvalidArgument)
	}
	switch {
	case req.Debounce != nil:
		return shardapi.PolicyDebounce, checkDebounce(req.Debounce)
	case req.Batch != nil:
		if req.WorkflowID != "" {
			return "", fmt.Errorf("a batch start takes no workflow_id: its run gathers many starts: %w", shardapi.ErrInvalidArgument)
		}
		return shardapi.PolicyBatch, checkBatch(req.Batch)
	}
	return shardapi.PolicyThrottle, checkThrottle(req.Throttle)
}

func checkDebounce(d *shardapi.Debounce) error {
	if d.MaxWait == 0 {
		d.MaxWait = shardapi.DebounceMaxWaitDefault
	}
	if err := checkPolicyKey("debounce.key", d.Key); err != nil {
		return err
	}
	if err := checkWait("debounce.window", d.Window); err != nil {
		return err
	}
	return checkWait("debounce.max_wait", d.MaxWait)
}

func checkBatch(b *shardapi.Batch) error {
	if b.MaxSize == 0 {
		b.MaxSize = shardapi.BatchMaxSizeDefault
	}
	if b.MaxWait == 0 {
		b.MaxWait = shardapi.BatchMaxWaitDefault
	}
	if err := checkPolicyKey("batch_key", b.Key); err != nil {
		return err
	}
	if b.MaxSize < 1 || b.MaxSize > shardapi.MaxBatchSize {
		return fmt.Errorf("batch_max_size %d: want 1 to %d: %w", b.MaxSize, shardapi.MaxBatchSize, shardapi.ErrInvalidArgument)
	}
	return checkWait("batch_max_wait", b.MaxWait)
}

func checkThrottle(t *shardapi.Throttle) error {
	if t.Per == 0 {
		t.Per = time.Second
	}
	if t.MaxBacklog == 0 {
		t.MaxBacklog = shardapi.ThrottleBacklogDefault
	}
	if err := checkPolicyKey("throttle.key", t.Key); err != nil {
		return err
	}
	if err := checkWait("throttle.per", t.Per); err != nil {
		return err
	}
	if t.Rate < 1 || t.Per/time.Duration(t.Rate) < time.Microsecond {
		return fmt.Errorf("throttle.rate %d per %s: want at least 1, at most one start a microsecond: %w", t.Rate, t.Per, shardapi.ErrInvalidArgument)
	}
	if t.MaxBacklog < 1 || t.MaxBacklog > shardapi.MaxThrottleBacklog {
		return fmt.Errorf("throttle.max_backlog %d: want 1 to %d: %w", t.MaxBacklog, shardapi.MaxThrottleBacklog, shardapi.ErrInvalidArgument)
	}
	return nil
}

func checkPolicyKey(field, key string) error {
	if key == "" || len(key) > 1024 {
		return fmt.Errorf("%s: want 1 to 1024 bytes: %w", field, shardapi.ErrInvalidArgument)
	}
	return nil
}

func checkWait(field string, d time.Duration) error {
	if d <= 0 || d > maxDeferWait {
		return fmt.Errorf("%s %s: want more than 0, at most %s: %w", field, d, maxDeferWait, shardapi.ErrInvalidArgument)
	}
	return nil
}

func debounce(ctx context.Context, tx *fence.Tx, shard uint16, req shardapi.DeferRequest, now time.Time) (shardapi.Deferred, error) {
	p := req.Debounce
	d, err := store.Debounce(ctx, tx, shardapi.NewExecutionID(shard), req.WorkflowName, p.Key, req.WorkflowID,
		req.Input, now, p.Window.Microseconds(), p.MaxWait.Microseconds())
	if err != nil {
		return d, fmt.Errorf("debounce %q: %w", p.Key, store.Translate(err))
	}
	return d, nil
}

// BatchCloseTries bounds the batches one start closes to make room.
const BatchCloseTries = 4

// batch appends the start to its key's open batch, or opens one; closed
// reports that it closed a full batch (due at once) to make room.
// afterClose, when set (tests), runs after each close.
func batch(ctx context.Context, tx *fence.Tx, shard uint16, req shardapi.DeferRequest, now time.Time, maxBytes int64,
	afterClose func(context.Context, *fence.Tx) error) (d shardapi.Deferred, closed bool, err error) {
	p := req.Batch
	size := int64(len(runs.InputOrNull(req.Input)))
	for try := 1; ; try++ {
		d, err = store.AppendBatch(ctx, tx, shardapi.NewExecutionID(shard), req.WorkflowName, p.Key,
			req.Input, p.MaxSize, now, p.MaxWait.Microseconds(), size, maxBytes)
		if !errors.Is(err, pgx.ErrNoRows) {
			break
		}
		if try == BatchCloseTries {
			// Concurrent starts filled each batch this one opened room in.
			return d, closed, fmt.Errorf("batch %q: its batches fill faster than they close: %w", p.Key, shardapi.ErrUnavailable)
		}
		if err = store.CloseBatch(ctx, tx, req.WorkflowName, p.Key, now); err != nil {
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
		return d, closed, fmt.Errorf("batch %q: %w", p.Key, store.Translate(err))
	}
	return d, closed, nil
}

// throttle hands the start its key's next slot, under the lock of the
// key's pace row, unless the key's backlog is full.
func throttle(ctx context.Context, tx *fence.Tx, shard uint16, req shardapi.DeferRequest, now time.Time) (shardapi.Deferred, error) {
	p := req.Throttle
	next, err := store.LockThrottle(ctx, tx, req.WorkflowName, p.Key, now)
	if err != nil {
		return shardapi.Deferred{}, fmt.Errorf("lock throttle %q: %w", p.Key, store.Translate(err))
	}
	backlog, earliest, err := store.ThrottleBacklog(ctx, tx, req.WorkflowName, p.Key)
	if err != nil {
		return shardapi.Deferred{}, fmt.Errorf("count throttle %q: %w", p.Key, store.Translate(err))
	}
	if backlog >= p.MaxBacklog {
		return shardapi.Deferred{}, &shardapi.ThrottledError{Key: p.Key, Backlog: backlog, RetryAfter: retryAfter(earliest, now)}
	}
	slot := now
	if next.After(now) {
		slot = next
	}
	d, err := store.InsertThrottled(ctx, tx, shardapi.NewExecutionID(shard), req.WorkflowName, p.Key, req.WorkflowID, req.Input, now, slot)
	if err != nil {
		return d, fmt.Errorf("throttle %q: %w", p.Key, store.Translate(err))
	}
	if err := store.PaceThrottle(ctx, tx, req.WorkflowName, p.Key, slot.Add(p.Per/time.Duration(p.Rate))); err != nil {
		return d, fmt.Errorf("pace throttle %q: %w", p.Key, store.Translate(err))
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

// Get reads one deferred item; ErrNotFound when there is none.
func (x *Starts) Get(ctx context.Context, id uuid.UUID) (shardapi.Deferred, error) {
	d, err := store.ReadDeferred(ctx, x.d.Pool, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return d, &shardapi.NotFoundError{What: "deferred item", ID: id.String()}
	}
	if err != nil {
		return d, fmt.Errorf("read deferred %s: %w", id, store.Translate(err))
	}
	return d, nil
}

// List lists the items not fired or not started yet (pending or
// firing), the soonest first, at most listDeferredLimit.
func (x *Starts) List(ctx context.Context) ([]shardapi.Deferred, error) {
	out, err := store.ListDeferred(ctx, x.d.Pool, listDeferredLimit)
	if err != nil {
		return nil, fmt.Errorf("list deferred: %w", store.Translate(err))
	}
	return out, nil
}

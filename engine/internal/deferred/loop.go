package deferred

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest/engine/internal/fence"
	"github.com/harvestd/harvest/engine/internal/loop"
	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
)

// The deferred fire loop: the shard's owner fires its due deferred items
// (starts.go). One fenced transaction closes up to deferredBatch due
// items (state firing, no longer open to starts) and inserts each one's
// outbox row, whose keyed start (shardapi.DeferredKey) the outbox
// performs. A crash before the commit leaves the items pending, to be
// fired again;
// after it, the outbox rows are durable and no item is closed twice. The
// key dedups a start the outbox performs twice.

// deferredBatch is how many due items one transaction fires.
const deferredBatch = 32

// The fire loop's crash points (the engine's crashpoint.go lists every
// point in order; a fire's start then meets the outbox's).
const (
	// CrashBeforeCommit: due items are closed and their outbox rows
	// written, before the commit.
	CrashBeforeCommit loop.CrashPoint = "deferred.before_commit"
	// CrashCommitted: they are committed, the outbox not woken.
	CrashCommitted loop.CrashPoint = "deferred.committed"
)

// fireDue fires up to deferredBatch due items; true if more may
// be due.
func (x *Starts) fireDue(ctx context.Context) (bool, error) {
	now := x.d.Now()
	due, err := store.DeferredDue(ctx, x.d.Pool, now)
	if err != nil {
		return false, fmt.Errorf("find due deferred: %w", err)
	}
	if !due {
		x.armNextDeferred(ctx)
		return false, nil
	}
	n := 0
	err = x.d.Fence.Do(ctx, func(tx *fence.Tx) (err error) {
		n, err = x.fireTx(ctx, tx, now)
		return err
	})
	if err != nil {
		return false, err
	}
	if err := x.d.Crash.At(ctx, CrashCommitted); err != nil {
		return false, err
	}
	if n > 0 {
		x.d.WakeOutbox(ctx)
	}
	return n == deferredBatch, nil
}

// fireTx closes the due items and inserts their outbox rows in the fire
// loop's transaction; it returns how many it fired.
func (x *Starts) fireTx(ctx context.Context, tx *fence.Tx, now time.Time) (int, error) {
	fires, err := closeDueDeferred(ctx, tx, now)
	if err != nil {
		return 0, err
	}
	var ob store.OutboxRows
	for _, f := range fires {
		if err := ob.Add(uuid.Nil, shardapi.DeferredKey(f.DeferredID), OutboxKind, f); err != nil {
			return 0, err
		}
	}
	b := &pgx.Batch{}
	ob.Queue(b)
	if err := x.d.Crash.At(ctx, CrashBeforeCommit); err != nil {
		return 0, err
	}
	return len(fires), tx.Send(ctx, b)
}

// closeDueDeferred closes the due items a concurrent start is not
// joining right now (those fire in the next pass) and returns their
// starts.
func closeDueDeferred(ctx context.Context, tx *fence.Tx, now time.Time) ([]store.DeferredFire, error) {
	out, err := store.CloseDueDeferred(ctx, tx, now, deferredBatch)
	if err != nil {
		return nil, fmt.Errorf("close due deferred: %w", err)
	}
	return out, nil
}

// armNextDeferred nudges the loop when the earliest pending item is due
// sooner than the next poll tick.
func (x *Starts) armNextDeferred(ctx context.Context) {
	next, err := store.NextDeferred(ctx, x.d.Pool)
	if err != nil || next == nil {
		return
	}
	x.armDeferred(*next)
}

// armDeferred nudges the loop at fireAt when that is sooner than the
// next poll tick.
func (x *Starts) armDeferred(fireAt time.Time) {
	wait := fireAt.Sub(x.d.Now())
	if wait <= 0 {
		x.poll.Nudge()
		return
	}
	x.poll.ArmIn(wait)
}

package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest/engine/internal/fence"
	"github.com/harvestd/harvest/engine/internal/store"
)

// The deferred fire loop: the shard's owner fires its due deferred items
// (deferred.go). One fenced transaction closes up to deferredBatch due
// items (state firing, no longer open to starts) and inserts each one's
// outbox row, whose keyed start (DeferredKey) the outbox performs. A
// crash before the commit leaves the items pending, to be fired again;
// after it, the outbox rows are durable and no item is closed twice. The
// key dedups a start the outbox performs twice.

// deferredBatch is how many due items one transaction fires.
const deferredBatch = 32

// deferredLoop fires due deferred items until ctx ends.
func (e *Engine) deferredLoop(ctx context.Context) {
	e.drainLoop(ctx, e.dfWake, e.fireDueDeferred)
}

// fireDueDeferred fires up to deferredBatch due items; true if more may
// be due.
func (e *Engine) fireDueDeferred(ctx context.Context) (bool, error) {
	now := e.now()
	due, err := store.DeferredDue(ctx, e.pool, now)
	if err != nil {
		return false, fmt.Errorf("find due deferred: %w", err)
	}
	if !due {
		e.armNextDeferred(ctx)
		return false, nil
	}
	n := 0
	err = e.withTx(ctx, func(tx *fence.Tx) error {
		fires, err := closeDueDeferred(ctx, tx, now)
		if err != nil {
			return err
		}
		n = len(fires)
		var ob store.OutboxRows
		for _, f := range fires {
			if err := ob.Add(uuid.Nil, DeferredKey(f.DeferredID), outboxDeferredStart, f); err != nil {
				return err
			}
		}
		b := &pgx.Batch{}
		ob.Queue(b)
		if err := e.crashAt(ctx, crashDeferredBeforeCommit); err != nil {
			return err
		}
		return tx.Send(ctx, b)
	})
	if err != nil {
		return false, err
	}
	if err := e.crashAt(ctx, crashDeferredCommitted); err != nil {
		return false, err
	}
	if n > 0 {
		e.nudge(e.obWake)
	}
	return n == deferredBatch, nil
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
func (e *Engine) armNextDeferred(ctx context.Context) {
	next, err := store.NextDeferred(ctx, e.pool)
	if err != nil || next == nil {
		return
	}
	e.armDeferred(*next)
}

// armDeferred nudges the loop at fireAt when that is sooner than the
// next poll tick.
func (e *Engine) armDeferred(fireAt time.Time) {
	wait := fireAt.Sub(e.now())
	if wait <= 0 {
		e.nudge(e.dfWake)
		return
	}
	if wait < e.cfg.PollInterval {
		time.AfterFunc(wait, func() { e.nudge(e.dfWake) })
	}
}

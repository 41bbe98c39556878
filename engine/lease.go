package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest/engine/internal/fence"
	"github.com/harvestd/harvest/engine/internal/store"
)

// acquireLease bumps the epoch if the lease is free, expired, already ours
// (a restart of this node) or Config.TakeOver approves of its holder. The
// exclusive fence lock waits for every in-flight fenced transaction of the
// previous epoch, so none of them can commit after the bump.
func (e *Engine) acquireLease(ctx context.Context) (int64, error) {
	tx, err := e.pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("acquire lease of shard %d: %w", e.cfg.ShardID, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	// Wait for every fenced transaction of the current holder (see fence).
	if err := store.LockFence(ctx, tx, fenceLockKey); err != nil {
		return 0, fmt.Errorf("acquire lease of shard %d: %w", e.cfg.ShardID, err)
	}
	l, err := store.LockLease(ctx, tx)
	if err != nil {
		return 0, fmt.Errorf("read lease of shard %d: %w", e.cfg.ShardID, err)
	}
	if l.Shard != nil && *l.Shard != int(e.cfg.ShardID) {
		return 0, fmt.Errorf("shard %d, database says %d: %w", e.cfg.ShardID, *l.Shard, ErrShardMismatch)
	}
	holder := deref(l.Owner)
	free := holder == "" || l.Expired || holder == e.cfg.NodeID || (e.cfg.TakeOver != nil && e.cfg.TakeOver(holder))
	if !free {
		return 0, &LeaseHeldError{Shard: e.cfg.ShardID, Owner: holder, ExpiresAt: deref(l.Expires)}
	}
	epoch, err := store.TakeLease(ctx, tx, e.cfg.NodeID, e.cfg.LeaseTTL, int(e.cfg.ShardID))
	if err != nil {
		return 0, fmt.Errorf("acquire lease of shard %d: %w", e.cfg.ShardID, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("acquire lease of shard %d: %w", e.cfg.ShardID, err)
	}
	return epoch, nil
}

// renewLease extends the lease; a changed epoch means it was lost. It
// measures the database's clock too (fence.Clock).
func (e *Engine) renewLease(ctx context.Context) error {
	sent := time.Now()
	db, err := store.RenewLease(ctx, e.pool, e.epoch.Load(), e.cfg.LeaseTTL)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return e.currentOwner(ctx)
	case err != nil:
		return fmt.Errorf("renew lease of shard %d: %w", e.cfg.ShardID, err)
	}
	e.clock.Observe(sent, db)
	return nil
}

// releaseLease frees the lease if we still hold it.
func (e *Engine) releaseLease(ctx context.Context) error {
	if err := store.ReleaseLease(ctx, e.pool, e.epoch.Load()); err != nil {
		return fmt.Errorf("release lease of shard %d: %w", e.cfg.ShardID, err)
	}
	return nil
}

func (e *Engine) currentOwner(ctx context.Context) error {
	epoch, owner, err := store.LeaseEpoch(ctx, e.pool)
	if err != nil {
		return fmt.Errorf("read lease of shard %d: %w", e.cfg.ShardID, err)
	}
	return &OwnershipLostError{Shard: e.cfg.ShardID, Epoch: epoch, Owner: deref(owner)}
}

func (e *Engine) renewLoop(ctx context.Context) {
	t := time.NewTicker(e.cfg.LeaseTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := e.renewLease(ctx)
		var lost *OwnershipLostError
		if errors.As(err, &lost) {
			e.lostLease(lost)
			return
		}
		if err != nil && ctx.Err() == nil {
			e.log.Warn().Err(err).Msg("lease renewal failed")
		}
	}
}

// fenceLockKey is the advisory lock that orders lease takeovers after
// every in-flight write transaction of the previous owner. (Advisory locks
// are per database; migrations use a different key.)
const fenceLockKey int64 = 0x4856_4645_4e43_4531 // "HVFENCE1"

// withTx runs fn in a fenced transaction and commits it.
func (e *Engine) withTx(ctx context.Context, fn func(tx *fence.Tx) error) error {
	return e.withFencedBatch(ctx, nil, fn)
}

// withFencedBatch begins a transaction and sends, in one round trip, the
// fence and the statements queue adds (their results go to their
// callbacks); if the fence holds, fn runs and the transaction commits.
//
// The fence: the transaction takes the fence advisory lock in shared mode
// (an in-memory lock: no row is written, so concurrent writers do not
// contend), then reads the epoch in a later statement, hence a later
// snapshot. A takeover takes the same lock exclusively before it bumps the
// epoch, so it waits for every transaction that passed the fence, and
// every transaction that fences after it sees the new epoch. Statements
// queued after the fence are rolled back with the transaction when the
// fence fails.
func (e *Engine) withFencedBatch(ctx context.Context, queue func(b *pgx.Batch), fn func(tx *fence.Tx) error) error {
	tx, batch, err := e.beginFenced(ctx)
	if err != nil {
		return err
	}
	defer tx.Release(context.WithoutCancel(ctx))
	var (
		epoch int64
		owner *string
	)
	store.QueueLeaseEpoch(batch, &epoch, &owner)
	if queue != nil {
		queue(batch)
	}
	if err := tx.SendBatch(ctx, batch).Close(); err != nil {
		return fmt.Errorf("shard %d: %w", e.cfg.ShardID, translate(err))
	}
	if epoch != e.epoch.Load() {
		lost := &OwnershipLostError{Shard: e.cfg.ShardID, Epoch: epoch, Owner: deref(owner)}
		e.lostLease(lost)
		return lost
	}
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Finish(ctx); err != nil {
		return fmt.Errorf("commit: %w", translate(err))
	}
	return nil
}

// beginFenced takes a connection for a fenced transaction while the
// engine holds the lease, and starts its first batch: BEGIN and the fence
// lock. The caller queues the epoch check next, and releases tx.
func (e *Engine) beginFenced(ctx context.Context) (*fence.Tx, *pgx.Batch, error) {
	if err := e.checkOwning(); err != nil {
		return nil, nil, err
	}
	conn, err := e.pool.Acquire(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("begin: %w", translate(err))
	}
	b := &pgx.Batch{}
	store.QueueBeginFenced(b, fenceLockKey)
	return fence.NewTx(conn, e.ahead()), b, nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

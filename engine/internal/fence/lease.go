package fence

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
)

// LockKey is the advisory lock that orders lease takeovers after every
// in-flight write transaction of the previous owner. (Advisory locks are
// per database; migrations use a different key.)
const LockKey int64 = 0x4856_4645_4e43_4531 // "HVFENCE1"

// Acquire bumps the epoch if the lease is free, expired, already ours (a
// restart of this node) or Config.TakeOver approves of its holder. The
// exclusive fence lock waits for every in-flight fenced transaction of
// the previous epoch, so none of them can commit after the bump. It
// returns the new epoch; the caller stores it in Epoch once its caches
// are clear.
func (f *Fence) Acquire(ctx context.Context) (int64, error) {
	tx, err := f.cfg.Pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("acquire lease of shard %d: %w", f.cfg.ShardID, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	// Wait for every fenced transaction of the current holder (DoBatch).
	if err := store.LockFence(ctx, tx, LockKey); err != nil {
		return 0, fmt.Errorf("acquire lease of shard %d: %w", f.cfg.ShardID, err)
	}
	if err := f.free(ctx, tx); err != nil {
		return 0, err
	}
	epoch, err := store.TakeLease(ctx, tx, f.cfg.NodeID, f.cfg.LeaseTTL, int(f.cfg.ShardID))
	if err != nil {
		return 0, fmt.Errorf("acquire lease of shard %d: %w", f.cfg.ShardID, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("acquire lease of shard %d: %w", f.cfg.ShardID, err)
	}
	return epoch, nil
}

// free checks, under the lease row's lock, that the database is this
// shard's and that its lease may be taken.
func (f *Fence) free(ctx context.Context, tx pgx.Tx) error {
	l, err := store.LockLease(ctx, tx)
	if err != nil {
		return fmt.Errorf("read lease of shard %d: %w", f.cfg.ShardID, err)
	}
	if l.Shard != nil && *l.Shard != int(f.cfg.ShardID) {
		return fmt.Errorf("shard %d, database says %d: %w", f.cfg.ShardID, *l.Shard, shardapi.ErrShardMismatch)
	}
	holder := deref(l.Owner)
	if holder == "" || l.Expired || holder == f.cfg.NodeID || (f.cfg.TakeOver != nil && f.cfg.TakeOver(holder)) {
		return nil
	}
	return &shardapi.LeaseHeldError{Shard: f.cfg.ShardID, Owner: holder, ExpiresAt: deref(l.Expires)}
}

// Renew extends the lease; a changed epoch means it was lost
// (*shardapi.OwnershipLostError). It measures the database's clock too.
func (f *Fence) Renew(ctx context.Context) error {
	sent := time.Now()
	db, err := store.RenewLease(ctx, f.cfg.Pool, f.Epoch.Load(), f.cfg.LeaseTTL)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return f.currentOwner(ctx)
	case err != nil:
		return fmt.Errorf("renew lease of shard %d: %w", f.cfg.ShardID, err)
	}
	f.cfg.Clock.Observe(sent, db)
	return nil
}

// Release frees the lease if it is still ours.
func (f *Fence) Release(ctx context.Context) error {
	if err := store.ReleaseLease(ctx, f.cfg.Pool, f.Epoch.Load()); err != nil {
		return fmt.Errorf("release lease of shard %d: %w", f.cfg.ShardID, err)
	}
	return nil
}

func (f *Fence) currentOwner(ctx context.Context) error {
	epoch, owner, err := store.LeaseEpoch(ctx, f.cfg.Pool)
	if err != nil {
		return fmt.Errorf("read lease of shard %d: %w", f.cfg.ShardID, err)
	}
	return &shardapi.OwnershipLostError{Shard: f.cfg.ShardID, Epoch: epoch, Owner: deref(owner)}
}

// Run renews the lease every third of its TTL until ctx ends or the
// lease is lost (then it calls Config.Lost and returns).
func (f *Fence) Run(ctx context.Context) {
	t := time.NewTicker(f.cfg.LeaseTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := f.Renew(ctx)
		var lost *shardapi.OwnershipLostError
		if errors.As(err, &lost) {
			f.cfg.Lost(lost)
			return
		}
		if err != nil && ctx.Err() == nil {
			f.cfg.Log.Warn().Err(err).Msg("lease renewal failed")
		}
	}
}

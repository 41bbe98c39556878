package fence

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
)

// Config is what a Fence needs of its engine.
type Config struct {
	// Pool is the shard database.
	Pool *pgxpool.Pool
	// ShardID and NodeID name the shard and the node that leases it.
	ShardID uint16
	NodeID  string
	// LeaseTTL is how long a lease lasts unrenewed; it is renewed every
	// third of it.
	LeaseTTL time.Duration
	// TakeOver, if set, approves of taking the lease from a live holder.
	TakeOver func(holder string) bool
	// Ahead is the workflow clock's lead over this node's clock, taken
	// when a transaction begins (Tx.Ahead).
	Ahead func() time.Duration
	// Clock learns the database's clock from each renewal.
	Clock *Clock
	// Lost is called once a fence or a renewal finds the lease lost.
	Lost func(*shardapi.OwnershipLostError)
	// Log receives the renewal failures.
	Log zerolog.Logger
}

// Fence holds a shard's lease and runs its fenced transactions.
type Fence struct {
	cfg Config
	// Epoch is the lease's epoch while held (0 before the first).
	Epoch atomic.Int64
	// Owning: the lease is held and not known lost.
	Owning atomic.Bool
}

// New returns the fence of cfg's shard, not yet holding its lease.
func New(cfg Config) *Fence { return &Fence{cfg: cfg} }

// CheckOwning fails with ErrNotRunning unless the lease is held.
func (f *Fence) CheckOwning() error {
	if !f.Owning.Load() {
		return fmt.Errorf("shard %d: %w", f.cfg.ShardID, shardapi.ErrNotRunning)
	}
	return nil
}

// Do runs fn in a fenced transaction and commits it.
func (f *Fence) Do(ctx context.Context, fn func(tx *Tx) error) error {
	return f.DoBatch(ctx, nil, fn)
}

// DoBatch begins a transaction and sends, in one round trip, the fence
// and the statements queue adds (their results go to their callbacks);
// if the fence holds, fn runs and the transaction commits.
//
// The fence: the transaction takes the fence advisory lock in shared mode
// (an in-memory lock: no row is written, so concurrent writers do not
// contend), then reads the epoch in a later statement, hence a later
// snapshot. A takeover takes the same lock exclusively before it bumps the
// epoch, so it waits for every transaction that passed the fence, and
// every transaction that fences after it sees the new epoch. Statements
// queued after the fence are rolled back with the transaction when the
// fence fails.
func (f *Fence) DoBatch(ctx context.Context, queue func(b *pgx.Batch), fn func(tx *Tx) error) error {
	tx, batch, err := f.Begin(ctx)
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
		return fmt.Errorf("shard %d: %w", f.cfg.ShardID, store.Translate(err))
	}
	if epoch != f.Epoch.Load() {
		return f.lost(epoch, owner)
	}
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Finish(ctx); err != nil {
		return fmt.Errorf("commit: %w", store.Translate(err))
	}
	return nil
}

// Begin takes a connection for a fenced transaction while the lease is
// held, and starts its first batch: BEGIN and the fence lock. The caller
// queues the epoch check next, and releases tx.
func (f *Fence) Begin(ctx context.Context) (*Tx, *pgx.Batch, error) {
	if err := f.CheckOwning(); err != nil {
		return nil, nil, err
	}
	conn, err := f.cfg.Pool.Acquire(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("begin: %w", store.Translate(err))
	}
	b := &pgx.Batch{}
	store.QueueBeginFenced(b, LockKey)
	return NewTx(conn, f.cfg.Ahead()), b, nil
}

// lost reports the lease lost to the holder of epoch.
func (f *Fence) lost(epoch int64, owner *string) error {
	err := &shardapi.OwnershipLostError{Shard: f.cfg.ShardID, Epoch: epoch, Owner: deref(owner)}
	f.cfg.Lost(err)
	return err
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

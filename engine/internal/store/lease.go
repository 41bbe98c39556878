package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Lease is the shard lease's row as a takeover reads it.
type Lease struct {
	Shard   *int
	Owner   *string
	Expires *time.Time
	// Expired: the lease has no expiry or it has passed.
	Expired bool
}

// LockFence takes the fence advisory lock key exclusively, for the rest
// of the transaction: it waits for every fenced transaction in flight.
func LockFence(ctx context.Context, q Querier, key int64) error {
	_, err := q.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, key)
	return err
}

// LockLease reads the lease row and locks it for the transaction.
func LockLease(ctx context.Context, q Querier) (Lease, error) {
	var l Lease
	err := q.QueryRow(ctx, `
		SELECT shard_id, owner_node, expires_at, coalesce(expires_at < now(), true)
		  FROM harvest_shard_lease FOR UPDATE`).Scan(&l.Shard, &l.Owner, &l.Expires, &l.Expired)
	return l, err
}

// TakeLease makes node the lease's holder for ttl under a new epoch, which
// it returns.
func TakeLease(ctx context.Context, q Querier, node string, ttl time.Duration, shard int) (int64, error) {
	var epoch int64
	err := q.QueryRow(ctx, `
		UPDATE harvest_shard_lease
		   SET owner_node = $1, epoch = epoch + 1, acquired_at = now(),
		       expires_at = now() + $2 * interval '1 millisecond', shard_id = $3
		RETURNING epoch`, node, ttl.Milliseconds(), shard).Scan(&epoch)
	return epoch, err
}

// RenewLease extends the lease of epoch by ttl and returns the database's
// now(); pgx.ErrNoRows when the epoch is no longer the lease's.
func RenewLease(ctx context.Context, q Querier, epoch int64, ttl time.Duration) (time.Time, error) {
	var db time.Time
	err := q.QueryRow(ctx, `
		UPDATE harvest_shard_lease SET expires_at = now() + $2 * interval '1 millisecond'
		 WHERE epoch = $1 RETURNING now()`, epoch, ttl.Milliseconds()).Scan(&db)
	return db, err
}

// ReleaseLease frees the lease if epoch still holds it.
func ReleaseLease(ctx context.Context, q Querier, epoch int64) error {
	_, err := q.Exec(ctx, `
		UPDATE harvest_shard_lease SET owner_node = NULL, expires_at = now() WHERE epoch = $1`, epoch)
	return err
}

// leaseEpochSQL reads the lease's epoch and holder.
const leaseEpochSQL = `SELECT epoch, owner_node FROM harvest_shard_lease`

// LeaseEpoch reads the lease's epoch and holder (nil: none).
func LeaseEpoch(ctx context.Context, q Querier) (epoch int64, owner *string, err error) {
	err = q.QueryRow(ctx, leaseEpochSQL).Scan(&epoch, &owner)
	return epoch, owner, err
}

// QueueBeginFenced queues a fenced transaction's BEGIN and the fence lock
// key taken shared: the start of its first batch.
func QueueBeginFenced(b *pgx.Batch, key int64) {
	b.Queue(`BEGIN`)
	b.Queue(`SELECT pg_advisory_xact_lock_shared($1)`, key)
}

// QueueLeaseEpoch queues the read of the lease's epoch and holder into
// epoch and owner: the fence's check, after QueueBeginFenced.
func QueueLeaseEpoch(b *pgx.Batch, epoch *int64, owner **string) {
	b.Queue(leaseEpochSQL).QueryRow(func(row pgx.Row) error {
		return row.Scan(epoch, owner)
	})
}

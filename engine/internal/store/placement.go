package store

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
)

// The placement redirects, harvest_placement_redirects: one row per
// routing key (workflow name, routing key) a newer placement epoch
// claimed for another shard, and the routing key's placement lock, a
// two-key transaction advisory lock.

// QueuePlacementLock queues the placement lock of routing key routingKey
// of workflow name: the two-key advisory lock (class, hashtext of name
// and key).
func QueuePlacementLock(b *pgx.Batch, class int32, name, routingKey string) {
	b.Queue(`SELECT pg_advisory_xact_lock($1, hashtext($2 || '/' || $3))`, class, name, routingKey)
}

// QueueRedirect queues the read of the redirect of routing key routingKey
// of workflow name; fn gets its epoch and target shard, and is not called
// when the key has none.
func QueueRedirect(b *pgx.Batch, name, routingKey string, fn func(epoch int64, shard int32)) {
	b.Queue(`SELECT epoch, target_shard FROM harvest_placement_redirects
	          WHERE workflow_name = $1 AND routing_key = $2`, name, routingKey).
		QueryRow(func(row pgx.Row) error {
			var (
				epoch int64
				shard int32
			)
			err := row.Scan(&epoch, &shard)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			if err != nil {
				return err
			}
			fn(epoch, shard)
			return nil
		})
}

// UpsertRedirect records the redirect of routing key routing of workflow
// name to shard target under epoch, unless a redirect of a newer epoch is
// there (pgx.ErrNoRows), and returns the epoch and target recorded.
func UpsertRedirect(ctx context.Context, q Querier, name, routing string, epoch int64, target int32) (int64, int32, error) {
	var (
		gotEpoch int64
		gotShard int32
	)
	err := q.QueryRow(ctx, `
		INSERT INTO harvest_placement_redirects (workflow_name, routing_key, epoch, target_shard)
		VALUES ($1, $2, $3, $4)
		ON CONFLICT (workflow_name, routing_key) DO UPDATE
		   SET epoch = EXCLUDED.epoch, target_shard = EXCLUDED.target_shard, created_at = now()
		 WHERE harvest_placement_redirects.epoch <= EXCLUDED.epoch
		RETURNING epoch, target_shard`, name, routing, epoch, target).Scan(&gotEpoch, &gotShard)
	return gotEpoch, gotShard, err
}

// ReadRedirect reads the epoch and target shard of the redirect of
// routing key routing of workflow name (pgx.ErrNoRows: none).
func ReadRedirect(ctx context.Context, q Querier, name, routing string) (int64, int32, error) {
	var (
		epoch int64
		shard int32
	)
	err := q.QueryRow(ctx, `SELECT epoch, target_shard FROM harvest_placement_redirects
		                         WHERE workflow_name = $1 AND routing_key = $2`, name, routing).Scan(&epoch, &shard)
	return epoch, shard, err
}

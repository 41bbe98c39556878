package store

import (
	"context"
	"time"
)

// Sweepable names the tables SweepCreatedBefore may sweep.
const (
	StartClaims        = "harvest_start_idempotency"
	PlacementRedirects = "harvest_placement_redirects"
)

// SweepCreatedBefore deletes up to limit rows of table (StartClaims or
// PlacementRedirects) created more than window ago, skipping rows other
// transactions hold, and returns how many it deleted.
func SweepCreatedBefore(ctx context.Context, q Querier, table string, window time.Duration, limit int) (int64, error) {
	tag, err := q.Exec(ctx, `
			DELETE FROM `+table+`
			 WHERE ctid IN (SELECT ctid FROM `+table+`
			                 WHERE created_at < now() - $1 * interval '1 millisecond'
			                 LIMIT $2 FOR UPDATE SKIP LOCKED)`,
		window.Milliseconds(), limit)
	return tag.RowsAffected(), err
}

// SweepDeferredItems deletes up to limit deferred items started or failed
// before before, and returns how many it deleted.
func SweepDeferredItems(ctx context.Context, q Querier, before time.Time, limit int) (int64, error) {
	tag, err := q.Exec(ctx, `
			DELETE FROM harvest_deferred WHERE deferred_id IN (
				SELECT deferred_id FROM harvest_deferred WHERE state IN ('started', 'failed') AND updated_at < $1
				 LIMIT $2 FOR UPDATE SKIP LOCKED)`, before, limit)
	return tag.RowsAffected(), err
}

// SweepThrottleKeys deletes up to limit throttle keys idle since before.
func SweepThrottleKeys(ctx context.Context, q Querier, before time.Time, limit int) error {
	_, err := q.Exec(ctx, `
			DELETE FROM harvest_deferred_throttle WHERE (workflow_name, throttle_key) IN (
				SELECT workflow_name, throttle_key FROM harvest_deferred_throttle WHERE next_at < $1
				 LIMIT $2 FOR UPDATE SKIP LOCKED)`, before, limit)
	return err
}

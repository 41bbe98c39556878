package store

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// The start claims, harvest_start_idempotency: one row per keyed start
// (workflow name, idempotency key) while its idempotency window lasts.
// Here too: the reads of the runs holding workflow ids' slots, which a
// start checks beside its claim.

// LookupClaimsSQL finds the live claims of many keys: for the i-th
// (name, key) of $1 and $2 with a claim younger than $3 milliseconds, a
// row (i, execution id, workflow id, state, seconds the claim has left,
// and the chain's current run and its state when the run continued as
// new). One index lookup per key,
// whatever the table's size: the LIMIT keeps the planner from turning the
// lateral lookups into a hash join over the whole claims table (a generic
// plan assumes ten keys).
const LookupClaimsSQL = `
	SELECT r.i, c.execution_id, c.workflow_id, c.state, c.left_s, c.latest_id, c.latest_state
	  FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS r(n, k, i)
	 CROSS JOIN LATERAL (
	       SELECT c.execution_id, e.workflow_id, e.state,
	              extract(epoch FROM c.created_at - now() + $3 * interval '1 millisecond')::float8 AS left_s,
	              l.execution_id AS latest_id, l.state AS latest_state
	         FROM harvest_start_idempotency c
	         LEFT JOIN harvest_executions e ON e.execution_id = c.execution_id` + ChainLatestJoin + `
	        WHERE c.workflow_name = r.n AND c.idempotency_key = r.k
	          AND c.created_at >= now() - $3 * interval '1 millisecond'
	        LIMIT 1) c`

// Claim is a live start claim as the look-ups read it: its run, the run's
// workflow id and state (nil when the run is gone), the seconds the claim
// has left to live by the database's clock, and the chain's current run
// and its state when the run continued as new (nil otherwise).
type Claim struct {
	ExecutionID       uuid.UUID
	WorkflowID, State *string
	LeftS             float64
	Latest            *uuid.UUID
	LatestState       *string
}

// LookupClaim reads the live claim of key of workflow name, one younger
// than windowMS milliseconds; pgx.ErrNoRows when there is none.
func LookupClaim(ctx context.Context, q Querier, name, key string, windowMS int64) (Claim, error) {
	var c Claim
	err := q.QueryRow(ctx, `
		SELECT c.execution_id, e.workflow_id, e.state,
		       extract(epoch FROM c.created_at - now() + $3 * interval '1 millisecond')::float8,
		       l.execution_id, l.state
		  FROM harvest_start_idempotency c
		  LEFT JOIN harvest_executions e ON e.execution_id = c.execution_id`+ChainLatestJoin+`
		 WHERE c.workflow_name = $1 AND c.idempotency_key = $2
		   AND c.created_at >= now() - $3 * interval '1 millisecond'`, name, key, windowMS).
		Scan(&c.ExecutionID, &c.WorkflowID, &c.State, &c.LeftS, &c.Latest, &c.LatestState)
	return c, err
}

// QueueLookupClaims queues the look-up of the live claims of keys[i] of
// workflows names[i] (LookupClaimsSQL): fn gets each claim found and its
// index i in names and keys; done runs once every row is read.
func QueueLookupClaims(b *pgx.Batch, names, keys []string, windowMS int64, fn func(i int, c Claim), done func()) {
	b.Queue(LookupClaimsSQL, names, keys, windowMS).
		Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var (
					n int64
					c Claim
				)
				if err := rows.Scan(&n, &c.ExecutionID, &c.WorkflowID, &c.State, &c.LeftS, &c.Latest, &c.LatestState); err != nil {
					return err
				}
				fn(int(n-1), c)
			}
			if err := rows.Err(); err != nil {
				return err
			}
			done()
			return nil
		})
}

// QueueClaimKey queues the claim of key of workflow name for run id of
// shard: an insert, or the takeover of a claim older than windowMS
// milliseconds. claimed is set false when a live claim exists (possibly
// committed a moment ago by a concurrent start, whose insert this one
// waited for).
func QueueClaimKey(b *pgx.Batch, name, key string, id uuid.UUID, shard int, windowMS int64, claimed *bool) {
	b.Queue(`
		INSERT INTO harvest_start_idempotency (workflow_name, idempotency_key, execution_id, shard_id)
		VALUES ($1, $2, $3, $4)
		ON CONFLICT (workflow_name, idempotency_key) DO UPDATE
		   SET execution_id = EXCLUDED.execution_id, shard_id = EXCLUDED.shard_id, created_at = now()
		 WHERE harvest_start_idempotency.created_at < now() - $5 * interval '1 millisecond'
		RETURNING execution_id`, name, key, id, shard, windowMS).
		QueryRow(func(row pgx.Row) error {
			var got uuid.UUID
			err := row.Scan(&got)
			if errors.Is(err, pgx.ErrNoRows) {
				*claimed = false
				return nil
			}
			return err
		})
}

// PointClaim makes the claim of key of workflow name point at run id.
func PointClaim(ctx context.Context, q Querier, name, key string, id uuid.UUID) error {
	_, err := q.Exec(ctx, `
		UPDATE harvest_start_idempotency SET execution_id = $3
		 WHERE workflow_name = $1 AND idempotency_key = $2`, name, key, id)
	return err
}

// ClaimKeys are keys to claim in one statement, one per index: the
// workflow name, the key, the run it is claimed for, and the start's
// routing key and placement epoch (0: not placed).
type ClaimKeys struct {
	Names, Keys []string
	IDs         []uuid.UUID
	Routings    []string
	Epochs      []int64
}

// claimKeysSQL claims keys (taking over expired claims) and returns those
// it claimed. A key whose routing key a newer epoch redirected is not
// claimed (the placement checks mark it moved under the same locks).
const claimKeysSQL = `
	INSERT INTO harvest_start_idempotency (workflow_name, idempotency_key, execution_id, shard_id)
	SELECT n, k, id, $4 FROM unnest($1::text[], $2::text[], $3::uuid[], $6::text[], $7::bigint[]) AS r(n, k, id, rk, ep)
	 WHERE NOT EXISTS (SELECT 1 FROM harvest_placement_redirects d
	                    WHERE r.ep > 0 AND d.workflow_name = r.n AND d.routing_key = r.rk AND d.epoch > r.ep)
	ON CONFLICT (workflow_name, idempotency_key) DO UPDATE
	   SET execution_id = EXCLUDED.execution_id, shard_id = EXCLUDED.shard_id, created_at = now()
	 WHERE harvest_start_idempotency.created_at < now() - $5 * interval '1 millisecond'
	RETURNING workflow_name, idempotency_key`

// QueueClaimKeys queues the claim of k for shard (claimKeysSQL; a claim
// older than windowMS milliseconds is taken over); fn gets the name and
// key of each key claimed.
func QueueClaimKeys(b *pgx.Batch, k ClaimKeys, shard int, windowMS int64, fn func(name, key string)) {
	b.Queue(claimKeysSQL, k.Names, k.Keys, k.IDs, shard, windowMS, k.Routings, k.Epochs).Query(scanPairs(fn))
}

// QueueExpectKeysClaimed queues the claim of k for shard, as
// QueueClaimKeys does, and the check (harvest_expect, named expect) that
// every key was claimed.
func QueueExpectKeysClaimed(b *pgx.Batch, k ClaimKeys, shard int, windowMS int64, expect string) {
	b.Queue(`WITH c AS (`+claimKeysSQL+`)
			SELECT harvest_expect(count(*) = $8, $9) FROM c`,
		k.Names, k.Keys, k.IDs, shard, windowMS, k.Routings, k.Epochs, len(k.Keys), expect)
}

// QueueDropClaims queues the delete of the claims of keys[i] of workflows
// names[i], each if it still points at run ids[i].
func QueueDropClaims(b *pgx.Batch, names, keys []string, ids []uuid.UUID) {
	b.Queue(`
			DELETE FROM harvest_start_idempotency c
			 USING unnest($1::text[], $2::text[], $3::uuid[]) AS r(n, k, id)
			 WHERE c.workflow_name = r.n AND c.idempotency_key = r.k AND c.execution_id = r.id`,
		names, keys, ids)
}

// QueueLockSlotHolder queues the lock of the run holding the slot of
// workflow id workflowID of name: its execution id and then its
// ExecRowColumns are scanned into targets, and found is called, when
// there is one.
func QueueLockSlotHolder(b *pgx.Batch, name, workflowID string, targets []any, found func()) {
	b.Queue(`
		SELECT execution_id, `+ExecRowColumns+`
		  FROM harvest_executions
		 WHERE workflow_name = $1 AND workflow_id = $2 AND holds_slot FOR UPDATE`, name, workflowID).
		QueryRow(func(row pgx.Row) error {
			err := row.Scan(targets...)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			if err == nil {
				found()
			}
			return err
		})
}

// FindSlotHolder finds the run holding the slot of workflow id workflowID
// of name; found is false when none does.
func FindSlotHolder(ctx context.Context, q Querier, name, workflowID string) (id uuid.UUID, found bool, err error) {
	err = q.QueryRow(ctx, `
		SELECT execution_id FROM harvest_executions
		 WHERE workflow_name = $1 AND workflow_id = $2 AND holds_slot`, name, workflowID).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, false, nil
	}
	return id, err == nil, err
}

// slotHoldersSQL returns the workflow ids whose slot a run holds: lateral
// lookups with LIMIT, one index probe per id, never a hash join over
// every run.
const slotHoldersSQL = `
	SELECT x.workflow_name, x.workflow_id
	  FROM unnest($1::text[], $2::text[]) AS r(n, w)
	 CROSS JOIN LATERAL (
	       SELECT workflow_name, workflow_id FROM harvest_executions
	        WHERE workflow_name = r.n AND workflow_id = r.w AND holds_slot
	        LIMIT 1) x`

// QueueSlotHolders queues the look-up of the runs holding the slots of
// workflow ids workflowIDs[i] of names[i] (slotHoldersSQL); fn gets the
// name and workflow id of each slot held.
func QueueSlotHolders(b *pgx.Batch, names, workflowIDs []string, fn func(name, workflowID string)) {
	b.Queue(slotHoldersSQL, names, workflowIDs).Query(scanPairs(fn))
}

// scanPairs scans rows of two text columns, calling fn with each.
func scanPairs(fn func(a, b string)) func(pgx.Rows) error {
	return func(rows pgx.Rows) error {
		for rows.Next() {
			var a, b string
			if err := rows.Scan(&a, &b); err != nil {
				return err
			}
			fn(a, b)
		}
		return rows.Err()
	}
}

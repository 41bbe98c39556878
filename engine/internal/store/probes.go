package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest/engine/shardapi"
)

// The probes: read-only look-ups of what a shard holds, which the shard's
// placement claims and other nodes (routing a start elsewhere, or
// draining the shard) make without owning it.

// LookupSlotHolder reads the run holding the slot (name, workflowID);
// found is false when none does.
func LookupSlotHolder(ctx context.Context, q Querier, name, workflowID string) (h shardapi.SlotHolder, found bool, err error) {
	err = q.QueryRow(ctx, `
		SELECT execution_id, state, created_at FROM harvest_executions
		 WHERE workflow_name = $1 AND workflow_id = $2 AND holds_slot`, name, workflowID).
		Scan(&h.ExecutionID, &h.State, &h.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return shardapi.SlotHolder{}, false, nil
	}
	if err != nil {
		return shardapi.SlotHolder{}, false, fmt.Errorf("look up workflow id: %w", err)
	}
	return h, true, nil
}

// DrainCounts reads what the shard holds inside the idempotency window of
// windowMS milliseconds: the database's clock (Now), the claims' and the
// runs' counts and newest times, and the runs not closed (running or
// queued). ShardID and WindowPassesAt are left to the caller.
func DrainCounts(ctx context.Context, q Querier, windowMS int64) (shardapi.DrainStatus, error) {
	var st shardapi.DrainStatus
	err := q.QueryRow(ctx, `
		SELECT now(),
		       (SELECT count(*) FROM harvest_start_idempotency WHERE created_at >= now() - $1 * interval '1 millisecond'),
		       (SELECT max(created_at) FROM harvest_start_idempotency WHERE created_at >= now() - $1 * interval '1 millisecond'),
		       (SELECT count(*) FROM harvest_executions WHERE created_at >= now() - $1 * interval '1 millisecond'),
		       (SELECT max(created_at) FROM harvest_executions WHERE created_at >= now() - $1 * interval '1 millisecond'),
		       (SELECT count(*) FROM harvest_executions WHERE state IN ('RUNNING', 'QUEUED'))`, windowMS).
		Scan(&st.Now, &st.ClaimsInWindow, &st.NewestClaimAt, &st.RunsInWindow, &st.NewestRunAt, &st.RunningExecutions)
	return st, err
}

package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// SlotHolder is the run holding a (workflow name, workflow id) slot.
type SlotHolder struct {
	ExecutionID uuid.UUID `json:"execution_id"`
	State       string    `json:"state"`
	CreatedAt   time.Time `json:"created_at"`
}

// LookupWorkflowID is the read-only probe for the run holding
// (name, workflowID) on this shard; ok is false when none does.
func (e *Engine) LookupWorkflowID(ctx context.Context, name, workflowID string) (SlotHolder, bool, error) {
	return lookupHolder(ctx, e.pool, name, workflowID)
}

// DrainStatus is what a shard still holds inside the idempotency window:
// what a drain has to wait for.
type DrainStatus struct {
	ShardID uint16 `json:"shard_id"`
	// ClaimsInWindow counts start idempotency claims still deduplicating.
	ClaimsInWindow int64 `json:"claims_in_window"`
	// NewestClaimAt is the newest claim's time (nil: none in window).
	NewestClaimAt *time.Time `json:"newest_claim_at,omitempty"`
	// RunsInWindow counts runs created inside the window (their workflow
	// ids are still probed by starts routed elsewhere).
	RunsInWindow int64 `json:"runs_in_window"`
	// NewestRunAt is the newest run's creation time (nil: none in window).
	NewestRunAt *time.Time `json:"newest_run_at,omitempty"`
	// RunningExecutions counts runs not closed yet (they keep running).
	RunningExecutions int64 `json:"running_executions"`
	// WindowPassesAt is when nothing placed here is inside the window any
	// more (nil: already).
	WindowPassesAt *time.Time `json:"window_passes_at,omitempty"`
	// Now is the database clock the status was read at.
	Now time.Time `json:"now"`
}

// DrainStatus reads the shard's DrainStatus for the given window.
func (e *Engine) DrainStatus(ctx context.Context, window time.Duration) (DrainStatus, error) {
	return ReadDrainStatus(ctx, e.pool, e.cfg.ShardID, window)
}

// ReadDrainStatus reads a DrainStatus straight from a shard database (any
// node can, without owning the shard: it only reads).
func ReadDrainStatus(ctx context.Context, q querier, shard uint16, window time.Duration) (DrainStatus, error) {
	st := DrainStatus{ShardID: shard}
	ms := window.Milliseconds()
	err := q.QueryRow(ctx, `
		SELECT now(),
		       (SELECT count(*) FROM harvest_start_idempotency WHERE created_at >= now() - $1 * interval '1 millisecond'),
		       (SELECT max(created_at) FROM harvest_start_idempotency WHERE created_at >= now() - $1 * interval '1 millisecond'),
		       (SELECT count(*) FROM harvest_executions WHERE created_at >= now() - $1 * interval '1 millisecond'),
		       (SELECT max(created_at) FROM harvest_executions WHERE created_at >= now() - $1 * interval '1 millisecond'),
		       (SELECT count(*) FROM harvest_executions WHERE state = 'RUNNING')`, ms).
		Scan(&st.Now, &st.ClaimsInWindow, &st.NewestClaimAt, &st.RunsInWindow, &st.NewestRunAt, &st.RunningExecutions)
	if err != nil {
		return DrainStatus{}, fmt.Errorf("drain status of shard %d: %w", shard, err)
	}
	newest := st.NewestClaimAt
	if st.NewestRunAt != nil && (newest == nil || st.NewestRunAt.After(*newest)) {
		newest = st.NewestRunAt
	}
	if newest != nil {
		passes := newest.Add(window)
		st.WindowPassesAt = &passes
	}
	return st, nil
}

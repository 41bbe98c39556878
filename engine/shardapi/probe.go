package shardapi

import (
	"time"

	"github.com/google/uuid"
)

// SlotHolder is the run holding a (workflow name, workflow id) slot.
type SlotHolder struct {
	ExecutionID uuid.UUID `json:"execution_id"`
	State       string    `json:"state"`
	CreatedAt   time.Time `json:"created_at"`
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

// StateCacheStats is what the shard's state cache holds and how its
// lookups went (engine/internal/wftask/statecache.go).
type StateCacheStats struct {
	// Entries and Bytes are the cached runs and the event bytes they
	// applied.
	Entries int
	Bytes   int64
	// Hits and Misses count the workflow tasks that found their run
	// cached or not; Rebuilds the cached runs that could not be used
	// (stale, or their step failed) and were rebuilt by replay.
	Hits, Misses, Rebuilds int64
	// QueryHits counts the queries answered from cached state.
	QueryHits int64
}

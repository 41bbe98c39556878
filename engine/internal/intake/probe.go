package intake

import (
	"context"
	"fmt"
	"time"

	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
)

// LookupWorkflowID is the read-only probe for the run holding
// (name, workflowID) on this shard; ok is false when none does.
func (in *Intake) LookupWorkflowID(ctx context.Context, name, workflowID string) (shardapi.SlotHolder, bool, error) {
	return store.LookupSlotHolder(ctx, in.d.Pool, name, workflowID)
}

// DrainStatus reads the shard's DrainStatus for the given window.
func (in *Intake) DrainStatus(ctx context.Context, window time.Duration) (shardapi.DrainStatus, error) {
	return ReadDrainStatus(ctx, in.d.Pool, in.d.ShardID, window)
}

// ReadDrainStatus reads a DrainStatus straight from a shard database (any
// node can, without owning the shard: it only reads).
func ReadDrainStatus(ctx context.Context, q store.Querier, shard uint16, window time.Duration) (shardapi.DrainStatus, error) {
	st, err := store.DrainCounts(ctx, q, window.Milliseconds())
	if err != nil {
		return shardapi.DrainStatus{}, fmt.Errorf("drain status of shard %d: %w", shard, err)
	}
	st.ShardID = shard
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

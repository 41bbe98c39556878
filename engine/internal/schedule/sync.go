package schedule

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/harvestd/harvest/engine/internal/fence"
	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
)

// Schedules whose definitions live elsewhere (a cluster's raft catalog):
// the catalog holds each schedule's definition and generation, and the
// shard's owner copies them into harvest_schedules with Sync before it
// fires or answers about them. The copy keeps the cursor and the
// recent fires, which only the shard holds, and it is idempotent: a copy
// of the same definition changes nothing, a newer generation starts the
// schedule over (cursor at now), an older one is ignored. The catalog
// change comes first; a crash before the copy is repaired by the next one.

// Normalize checks spec for this engine's registry and fills its
// defaults, as Create does: what a catalog stores.
func (x *Schedules) Normalize(id string, spec shardapi.ScheduleSpec) (shardapi.ScheduleSpec, error) {
	if err := shardapi.ValidScheduleID(id); err != nil {
		return spec, err
	}
	spec, _, err := x.normalize(spec)
	return spec, err
}

// Sync makes the shard's copy of d current and reports whether it
// changed anything.
func (x *Schedules) Sync(ctx context.Context, d shardapi.ScheduleDef) (bool, error) {
	if d.Deleted {
		return x.syncDeleted(ctx, d)
	}
	var spec shardapi.ScheduleSpec
	if err := json.Unmarshal(d.Spec, &spec); err != nil {
		return false, fmt.Errorf("schedule %s: decode spec: %w", d.ID, err)
	}
	spec, clock, err := x.normalize(spec)
	if err != nil {
		return false, fmt.Errorf("schedule %s: %w", d.ID, err)
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		return false, err
	}
	now := x.d.Now()
	var n int
	var changed bool
	err = x.d.Fence.Do(ctx, func(tx *fence.Tx) (err error) {
		n, err = store.SyncSchedule(ctx, tx, d.ID, d.Generation, raw, d.Paused, now, x.nextDue(d.ID, d.Generation, spec, clock, now),
			int64(d.Revision))
		if err != nil || n > 0 {
			return err
		}
		changed, err = syncPaused(ctx, tx, d, now)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("sync schedule %s: %w", d.ID, err)
	}
	if n > 0 || changed && !d.Paused {
		x.poll.Nudge()
	}
	return n > 0 || changed, nil
}

// syncPaused pauses or resumes the copy of d's generation when it differs
// and d is not older than the copy (an unversioned d is never older). A
// resume starts from now, as Resume does.
func syncPaused(ctx context.Context, tx *fence.Tx, d shardapi.ScheduleDef, now time.Time) (bool, error) {
	changed, err := store.SyncSchedulePaused(ctx, tx, d.ID, d.Generation, d.Paused, int64(d.Revision), now)
	if err != nil {
		return false, fmt.Errorf("paused: %w", err)
	}
	return changed, nil
}

// syncDeleted deletes the copy of d's generation (or an older one).
func (x *Schedules) syncDeleted(ctx context.Context, d shardapi.ScheduleDef) (bool, error) {
	var n int
	err := x.d.Fence.Do(ctx, func(tx *fence.Tx) (err error) {
		n, err = store.SyncScheduleDeleted(ctx, tx, d.ID, d.Generation)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("sync deleted schedule %s: %w", d.ID, err)
	}
	return n > 0, nil
}

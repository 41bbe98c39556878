package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/harvestd/harvest/engine/internal/fence"
	"github.com/harvestd/harvest/engine/internal/store"
)

// Schedules whose definitions live elsewhere (a cluster's raft catalog):
// the catalog holds each schedule's definition and generation, and the
// shard's owner copies them into harvest_schedules with SyncSchedule
// before it fires or answers about them. The copy keeps the cursor and the
// recent fires, which only the shard holds, and it is idempotent: a copy
// of the same definition changes nothing, a newer generation starts the
// schedule over (cursor at now), an older one is ignored. The catalog
// change comes first; a crash before the copy is repaired by the next one.

// NormalizeSchedule checks spec for this engine's registry and fills its
// defaults, as CreateSchedule does: what a catalog stores.
func (e *Engine) NormalizeSchedule(id string, spec ScheduleSpec) (ScheduleSpec, error) {
	if err := ValidScheduleID(id); err != nil {
		return spec, err
	}
	spec, _, err := e.normalize(spec)
	return spec, err
}

// SyncSchedule makes the shard's copy of d current and reports whether it
// changed anything.
func (e *Engine) SyncSchedule(ctx context.Context, d ScheduleDef) (bool, error) {
	if d.Deleted {
		return e.syncDeleted(ctx, d)
	}
	var spec ScheduleSpec
	if err := json.Unmarshal(d.Spec, &spec); err != nil {
		return false, fmt.Errorf("schedule %s: decode spec: %w", d.ID, err)
	}
	spec, clock, err := e.normalize(spec)
	if err != nil {
		return false, fmt.Errorf("schedule %s: %w", d.ID, err)
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		return false, err
	}
	now := e.now()
	var n int
	var changed bool
	err = e.withTx(ctx, func(tx *fence.Tx) (err error) {
		n, err = store.SyncSchedule(ctx, tx, d.ID, d.Generation, raw, d.Paused, now, e.nextDue(d.ID, d.Generation, spec, clock, now),
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
		e.nudge(e.schWake)
	}
	return n > 0 || changed, nil
}

// syncPaused pauses or resumes the copy of d's generation when it differs
// and d is not older than the copy (an unversioned d is never older). A
// resume starts from now, as ResumeSchedule does.
func syncPaused(ctx context.Context, tx *fence.Tx, d ScheduleDef, now time.Time) (bool, error) {
	changed, err := store.SyncSchedulePaused(ctx, tx, d.ID, d.Generation, d.Paused, int64(d.Revision), now)
	if err != nil {
		return false, fmt.Errorf("paused: %w", err)
	}
	return changed, nil
}

// syncDeleted deletes the copy of d's generation (or an older one).
func (e *Engine) syncDeleted(ctx context.Context, d ScheduleDef) (bool, error) {
	var n int
	err := e.withTx(ctx, func(tx *fence.Tx) (err error) {
		n, err = store.SyncScheduleDeleted(ctx, tx, d.ID, d.Generation)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("sync deleted schedule %s: %w", d.ID, err)
	}
	return n > 0, nil
}

package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Schedules whose definitions live elsewhere (a cluster's raft catalog):
// the catalog holds each schedule's definition and generation, and the
// shard's owner copies them into harvest_schedules with SyncSchedule
// before it fires or answers about them. The copy keeps the cursor and the
// recent fires, which only the shard holds, and it is idempotent: a copy
// of the same definition changes nothing, a newer generation starts the
// schedule over (cursor at now), an older one is ignored. The catalog
// change comes first; a crash before the copy is repaired by the next one.

// ScheduleDef is a schedule's definition as a catalog holds it.
type ScheduleDef struct {
	ID         string
	Spec       json.RawMessage // a ScheduleSpec; nil when Deleted
	Paused     bool
	Generation int64
	Deleted    bool
}

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
	err = e.withTx(ctx, func(tx *fencedTx) error {
		return tx.QueryRow(ctx, `
			WITH up AS (
			  INSERT INTO harvest_schedules (schedule_id, generation, spec, paused, cursor_at, next_at)
			  VALUES ($1, $2, $3, $4, $5, $6)
			  ON CONFLICT (schedule_id) DO UPDATE
			     SET generation = EXCLUDED.generation, spec = EXCLUDED.spec, paused = EXCLUDED.paused,
			         cursor_at = EXCLUDED.cursor_at, next_at = EXCLUDED.next_at, created_at = now(), updated_at = now(),
			         deleted_at = NULL
			   WHERE harvest_schedules.generation < EXCLUDED.generation
			  RETURNING 1)
			SELECT count(*) FROM up`, d.ID, d.Generation, raw, d.Paused, now, e.nextDue(d.ID, d.Generation, spec, clock, now)).Scan(&n)
	})
	if err != nil {
		return false, fmt.Errorf("sync schedule %s: %w", d.ID, err)
	}
	if n > 0 {
		e.nudge(e.schWake)
		return true, nil
	}
	return e.syncPaused(ctx, d)
}

// syncPaused pauses or resumes the copy of d's generation when it differs.
func (e *Engine) syncPaused(ctx context.Context, d ScheduleDef) (bool, error) {
	var paused bool
	err := e.pool.QueryRow(ctx, `SELECT paused FROM harvest_schedules
		 WHERE schedule_id = $1 AND generation = $2 AND deleted_at IS NULL`, d.ID, d.Generation).Scan(&paused)
	if err != nil || paused == d.Paused {
		return false, ignoreNoRows(err)
	}
	if d.Paused {
		return true, e.PauseSchedule(ctx, d.ID)
	}
	return true, e.ResumeSchedule(ctx, d.ID)
}

// syncDeleted deletes the copy of d's generation (or an older one).
func (e *Engine) syncDeleted(ctx context.Context, d ScheduleDef) (bool, error) {
	var n int
	err := e.withTx(ctx, func(tx *fencedTx) error {
		return tx.QueryRow(ctx, `
			WITH d AS (UPDATE harvest_schedules SET deleted_at = now(), next_at = NULL, updated_at = now()
			            WHERE schedule_id = $1 AND generation <= $2 AND deleted_at IS NULL RETURNING schedule_id),
			     f AS (DELETE FROM harvest_schedule_fires WHERE schedule_id IN (SELECT schedule_id FROM d) AND outcome <> 'pending')
			SELECT count(*) FROM d`, d.ID, d.Generation).Scan(&n)
	})
	if err != nil {
		return false, fmt.Errorf("sync deleted schedule %s: %w", d.ID, err)
	}
	return n > 0, nil
}

// ignoreNoRows is err, nil for no row.
func ignoreNoRows(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	return err
}

package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest/engine/internal/fence"
)

// Schedules (migration 013, docs/schedules.md): a schedule starts a
// workflow at each of its nominal times, exactly once. The shard's fire
// loop (schedule_loop.go) advances a schedule's cursor and records each
// fire's intent as an outbox row in one fenced transaction; the outbox
// performs the keyed start (schedule_outbox.go). This file holds the
// operator's operations on the definitions (shardapi.ScheduleSpec).

// Limits of a schedule spec.
const (
	maxScheduleSpan   = 10 * 366 * 24 * time.Hour
	maxScheduleJitter = 24 * time.Hour
	// recentFires is how many fires describe lists.
	recentFires = 20
)

// Fire outcomes.
const (
	firePending = "pending"
	fireStarted = "started"
	fireSkipped = "skipped"
	fireFailed  = "failed"
)

// normalize validates spec for this engine's registry and fills its
// defaults.
func (e *Engine) normalize(spec ScheduleSpec) (ScheduleSpec, *scheduleClock, error) {
	if !e.reg.HasWorkflow(spec.WorkflowName) {
		return spec, nil, fmt.Errorf("workflow %q: %w", spec.WorkflowName, ErrUnknownWorkflow)
	}
	if spec.Overlap == "" {
		spec.Overlap = OverlapSkip
	}
	if spec.Overlap != OverlapSkip && spec.Overlap != OverlapBufferOne && spec.Overlap != OverlapAllowAll {
		return spec, nil, fmt.Errorf("overlap policy %q (want skip, buffer_one or allow_all): %w", spec.Overlap, ErrInvalidArgument)
	}
	if spec.CatchUpWindow == 0 {
		spec.CatchUpWindow = CatchUpWindowDefault
	}
	if err := checkSpans(spec); err != nil {
		return spec, nil, err
	}
	if len(spec.Input) > 0 && !json.Valid(spec.Input) {
		return spec, nil, fmt.Errorf("input is not JSON: %w", ErrInvalidArgument)
	}
	clock, err := newScheduleClock(spec)
	return spec, clock, err
}

func checkSpans(spec ScheduleSpec) error {
	if spec.CatchUpWindow < time.Second || spec.CatchUpWindow > maxScheduleSpan {
		return fmt.Errorf("catch_up_window %s: want 1s up to %s: %w", spec.CatchUpWindow, maxScheduleSpan, ErrInvalidArgument)
	}
	if spec.Jitter < 0 || spec.Jitter > maxScheduleJitter {
		return fmt.Errorf("jitter %s: want 0 up to %s: %w", spec.Jitter, maxScheduleJitter, ErrInvalidArgument)
	}
	return nil
}

// CreateSchedule stores a new schedule; its first fire is its first
// nominal time after now. A schedule id in use is a ConflictError; one
// deleted before comes back with the next generation.
func (e *Engine) CreateSchedule(ctx context.Context, id string, spec ScheduleSpec, paused bool) (Schedule, error) {
	if err := ValidScheduleID(id); err != nil {
		return Schedule{}, err
	}
	spec, clock, err := e.normalize(spec)
	if err != nil {
		return Schedule{}, err
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		return Schedule{}, fmt.Errorf("encode schedule: %w", err)
	}
	now := e.now()
	next := e.nextDue(id, 0, spec, clock, now)
	err = e.withTx(ctx, func(tx *fence.Tx) error {
		return tx.QueryRow(ctx, `
			INSERT INTO harvest_schedules (schedule_id, spec, paused, cursor_at, next_at) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (schedule_id) DO UPDATE
			   SET generation = harvest_schedules.generation + 1, spec = EXCLUDED.spec, paused = EXCLUDED.paused,
			       cursor_at = EXCLUDED.cursor_at, next_at = EXCLUDED.next_at, created_at = now(), updated_at = now(),
			       deleted_at = NULL
			 WHERE harvest_schedules.deleted_at IS NOT NULL
			RETURNING generation`, id, raw, paused, now, next).Scan(new(int64))
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return Schedule{}, fmt.Errorf("schedule %q: %w", id, ErrScheduleExists)
	}
	if err != nil {
		return Schedule{}, fmt.Errorf("create schedule %s: %w", id, err)
	}
	e.nudge(e.schWake)
	return e.GetSchedule(ctx, id)
}

// nextDue is when the first fire after t is due (nominal time plus
// jitter); nil when there is none.
func (e *Engine) nextDue(id string, generation int64, spec ScheduleSpec, clock *scheduleClock, t time.Time) *time.Time {
	n, ok := clock.next(t)
	if !ok {
		return nil
	}
	due := n.Add(fireJitter(id, generation, n, spec.Jitter))
	return &due
}

const scheduleColumns = `schedule_id, generation, spec, paused, cursor_at, created_at, updated_at`

func scanSchedule(row pgx.Row) (Schedule, error) {
	var s Schedule
	var raw []byte
	if err := row.Scan(&s.ID, &s.Generation, &raw, &s.Paused, &s.Cursor, &s.CreatedAt, &s.UpdatedAt); err != nil {
		return s, err
	}
	if err := json.Unmarshal(raw, &s.Spec); err != nil {
		return s, fmt.Errorf("decode schedule %s: %w", s.ID, err)
	}
	return s, nil
}

// withNextFires adds the schedule's next nominal times.
func (e *Engine) withNextFires(s Schedule, n int) Schedule {
	clock, err := newScheduleClock(s.Spec)
	if err != nil {
		return s
	}
	s.NextFires = clock.upcoming(s.Cursor, n)
	if s.NextFires == nil {
		s.NextFires = []time.Time{}
	}
	return s
}

// GetSchedule reads a schedule with its next fire times and recent fires.
func (e *Engine) GetSchedule(ctx context.Context, id string) (Schedule, error) {
	s, err := scanSchedule(e.pool.QueryRow(ctx, `SELECT `+scheduleColumns+` FROM harvest_schedules
		 WHERE schedule_id = $1 AND deleted_at IS NULL`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return s, &NotFoundError{What: "schedule", ID: id}
	}
	if err != nil {
		return s, fmt.Errorf("read schedule %s: %w", id, err)
	}
	s.Fires, err = e.scheduleFires(ctx, id, s.Generation)
	return e.withNextFires(s, 5), err
}

// scheduleFires lists the generation's recent fires, newest first, a
// pending one with its last refusal.
func (e *Engine) scheduleFires(ctx context.Context, id string, generation int64) ([]ScheduleFire, error) {
	rows, err := e.pool.Query(ctx, `
		SELECT f.fire_key, f.nominal_at, f.outcome, coalesce(nullif(f.reason, ''), o.last_error, ''), f.triggered, f.workflow_id,
		       coalesce(f.execution_id::text, ''), f.updated_at
		  FROM harvest_schedule_fires f
		  LEFT JOIN harvest_outbox o ON o.execution_id = '00000000-0000-0000-0000-000000000000' AND o.kind = 'schedule_start'
		       AND o.command_id = f.fire_key AND f.outcome = 'pending'
		 WHERE f.schedule_id = $1 AND f.generation = $2 ORDER BY f.nominal_at DESC LIMIT $3`, id, generation, recentFires)
	if err != nil {
		return nil, fmt.Errorf("read fires of %s: %w", id, err)
	}
	fires, err := pgx.CollectRows(rows, pgx.RowToStructByPos[ScheduleFire])
	if err != nil {
		return nil, fmt.Errorf("read fires of %s: %w", id, err)
	}
	return fires, nil
}

// ListSchedules lists the shard's schedules by id, each with its next
// fire time.
func (e *Engine) ListSchedules(ctx context.Context) ([]Schedule, error) {
	rows, err := e.pool.Query(ctx, `SELECT `+scheduleColumns+` FROM harvest_schedules
		 WHERE deleted_at IS NULL ORDER BY schedule_id`)
	if err != nil {
		return nil, fmt.Errorf("list schedules: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Schedule, error) { return scanSchedule(row) })
	if err != nil {
		return nil, fmt.Errorf("list schedules: %w", err)
	}
	for i := range out {
		out[i] = e.withNextFires(out[i], 1)
	}
	return out, nil
}

// DeleteSchedule deletes a schedule: it fires no more, its recorded
// fires go, a fire whose start is still pending is still performed.
func (e *Engine) DeleteSchedule(ctx context.Context, id string) error {
	return e.changeSchedule(ctx, id, `
		WITH d AS (UPDATE harvest_schedules SET deleted_at = now(), next_at = NULL, updated_at = now()
		            WHERE schedule_id = $1 AND deleted_at IS NULL RETURNING schedule_id),
		     f AS (DELETE FROM harvest_schedule_fires WHERE schedule_id IN (SELECT schedule_id FROM d) AND outcome <> 'pending')
		SELECT count(*) FROM d`)
}

// PauseSchedule stops a schedule's fires until ResumeSchedule.
func (e *Engine) PauseSchedule(ctx context.Context, id string) error {
	return e.changeSchedule(ctx, id, `
		WITH u AS (UPDATE harvest_schedules SET paused = true, updated_at = now()
		            WHERE schedule_id = $1 AND deleted_at IS NULL RETURNING 1)
		SELECT count(*) FROM u`)
}

// ResumeSchedule resumes a paused schedule from now: the nominal times
// that passed while it was paused are not fired.
func (e *Engine) ResumeSchedule(ctx context.Context, id string) error {
	err := e.changeSchedule(ctx, id, `
		WITH u AS (UPDATE harvest_schedules SET paused = false, updated_at = now(),
		                  cursor_at = CASE WHEN paused THEN greatest(cursor_at, $2) ELSE cursor_at END,
		                  next_at = CASE WHEN paused THEN $2 ELSE next_at END
		            WHERE schedule_id = $1 AND deleted_at IS NULL RETURNING 1)
		SELECT count(*) FROM u`, e.now())
	e.nudge(e.schWake)
	return err
}

// changeSchedule runs one fenced statement that counts the schedules it
// changed; none is ErrNotFound.
func (e *Engine) changeSchedule(ctx context.Context, id, sql string, args ...any) error {
	var n int
	err := e.withTx(ctx, func(tx *fence.Tx) error {
		return tx.QueryRow(ctx, sql, append([]any{id}, args...)...).Scan(&n)
	})
	if err != nil {
		return fmt.Errorf("change schedule %s: %w", id, err)
	}
	if n == 0 {
		return &NotFoundError{What: "schedule", ID: id}
	}
	return nil
}

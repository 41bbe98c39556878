package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest/engine/internal/fence"
	"github.com/harvestd/harvest/engine/internal/store"
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
		return store.CreateSchedule(ctx, tx, id, raw, paused, now, next)
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
	s, err := store.ReadSchedule(ctx, e.pool, id)
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
	fires, err := store.ScheduleFires(ctx, e.pool, id, generation, recentFires)
	if err != nil {
		return nil, fmt.Errorf("read fires of %s: %w", id, err)
	}
	return fires, nil
}

// ListSchedules lists the shard's schedules by id, each with its next
// fire time.
func (e *Engine) ListSchedules(ctx context.Context) ([]Schedule, error) {
	out, err := store.ListSchedules(ctx, e.pool)
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
	return e.changeSchedule(ctx, id, func(q store.Querier) (int, error) { return store.DeleteSchedule(ctx, q, id) })
}

// PauseSchedule stops a schedule's fires until ResumeSchedule.
func (e *Engine) PauseSchedule(ctx context.Context, id string) error {
	return e.changeSchedule(ctx, id, func(q store.Querier) (int, error) { return store.PauseSchedule(ctx, q, id) })
}

// ResumeSchedule resumes a paused schedule from now: the nominal times
// that passed while it was paused are not fired.
func (e *Engine) ResumeSchedule(ctx context.Context, id string) error {
	now := e.now()
	err := e.changeSchedule(ctx, id, func(q store.Querier) (int, error) { return store.ResumeSchedule(ctx, q, id, now) })
	e.nudge(e.schWake)
	return err
}

// changeSchedule runs, fenced, a change of schedule id that counts the
// schedules it changed; none is ErrNotFound.
func (e *Engine) changeSchedule(ctx context.Context, id string, change func(store.Querier) (int, error)) error {
	var n int
	err := e.withTx(ctx, func(tx *fence.Tx) (err error) {
		n, err = change(tx)
		return err
	})
	if err != nil {
		return fmt.Errorf("change schedule %s: %w", id, err)
	}
	if n == 0 {
		return &NotFoundError{What: "schedule", ID: id}
	}
	return nil
}

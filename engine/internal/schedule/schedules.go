package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest/engine/internal/fence"
	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
)

// Schedules (migration 013, docs/schedules.md): a schedule starts a
// workflow at each of its nominal times, exactly once. The shard's fire
// loop (loop.go) advances a schedule's cursor and records each fire's
// intent as an outbox row in one fenced transaction; the outbox performs
// the keyed start (outbox.go). This file holds the operator's operations
// on the definitions (shardapi.ScheduleSpec).

// Limits of a schedule spec.
const (
	maxScheduleSpan   = 10 * 366 * 24 * time.Hour
	maxScheduleJitter = 24 * time.Hour
	// recentFires is how many fires describe lists.
	recentFires = 20
)

// Fire outcomes.
const (
	FirePending = "pending"
	FireStarted = "started"
	FireSkipped = "skipped"
	FireFailed  = "failed"
)

// normalize validates spec for this engine's registry and fills its
// defaults.
func (x *Schedules) normalize(spec shardapi.ScheduleSpec) (shardapi.ScheduleSpec, *scheduleClock, error) {
	if !x.d.HasWorkflow(spec.WorkflowName) {
		return spec, nil, fmt.Errorf("workflow %q: %w", spec.WorkflowName, shardapi.ErrUnknownWorkflow)
	}
	if spec.Overlap == "" {
		spec.Overlap = shardapi.OverlapSkip
	}
	if spec.Overlap != shardapi.OverlapSkip && spec.Overlap != shardapi.OverlapBufferOne && spec.Overlap != shardapi.OverlapAllowAll {
		return spec, nil, fmt.Errorf("overlap policy %q (want skip, buffer_one or allow_all): %w", spec.Overlap, shardapi.ErrInvalidArgument)
	}
	if spec.CatchUpWindow == 0 {
		spec.CatchUpWindow = shardapi.CatchUpWindowDefault
	}
	if err := checkSpans(spec); err != nil {
		return spec, nil, err
	}
	if len(spec.Input) > 0 && !json.Valid(spec.Input) {
		return spec, nil, fmt.Errorf("input is not JSON: %w", shardapi.ErrInvalidArgument)
	}
	clock, err := newScheduleClock(spec)
	return spec, clock, err
}

func checkSpans(spec shardapi.ScheduleSpec) error {
	if spec.CatchUpWindow < time.Second || spec.CatchUpWindow > maxScheduleSpan {
		return fmt.Errorf("catch_up_window %s: want 1s up to %s: %w", spec.CatchUpWindow, maxScheduleSpan, shardapi.ErrInvalidArgument)
	}
	if spec.Jitter < 0 || spec.Jitter > maxScheduleJitter {
		return fmt.Errorf("jitter %s: want 0 up to %s: %w", spec.Jitter, maxScheduleJitter, shardapi.ErrInvalidArgument)
	}
	return nil
}

// Create stores a new schedule; its first fire is its first
// nominal time after now. A schedule id in use is a shardapi.ConflictError; one
// deleted before comes back with the next generation.
func (x *Schedules) Create(ctx context.Context, id string, spec shardapi.ScheduleSpec, paused bool) (shardapi.Schedule, error) {
	if err := shardapi.ValidScheduleID(id); err != nil {
		return shardapi.Schedule{}, err
	}
	spec, clock, err := x.normalize(spec)
	if err != nil {
		return shardapi.Schedule{}, err
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		return shardapi.Schedule{}, fmt.Errorf("encode schedule: %w", err)
	}
	now := x.d.Now()
	next := x.nextDue(id, 0, spec, clock, now)
	err = x.d.Fence.Do(ctx, func(tx *fence.Tx) error {
		return store.CreateSchedule(ctx, tx, id, raw, paused, now, next)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return shardapi.Schedule{}, fmt.Errorf("schedule %q: %w", id, shardapi.ErrScheduleExists)
	}
	if err != nil {
		return shardapi.Schedule{}, fmt.Errorf("create schedule %s: %w", id, err)
	}
	x.poll.Nudge()
	return x.Get(ctx, id)
}

// nextDue is when the first fire after t is due (nominal time plus
// jitter); nil when there is none.
func (x *Schedules) nextDue(id string, generation int64, spec shardapi.ScheduleSpec, clock *scheduleClock, t time.Time) *time.Time {
	n, ok := clock.next(t)
	if !ok {
		return nil
	}
	due := n.Add(fireJitter(id, generation, n, spec.Jitter))
	return &due
}

// withNextFires adds the schedule's next nominal times.
func (x *Schedules) withNextFires(s shardapi.Schedule, n int) shardapi.Schedule {
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

// Get reads a schedule with its next fire times and recent fires.
func (x *Schedules) Get(ctx context.Context, id string) (shardapi.Schedule, error) {
	s, err := store.ReadSchedule(ctx, x.d.Pool, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return s, &shardapi.NotFoundError{What: "schedule", ID: id}
	}
	if err != nil {
		return s, fmt.Errorf("read schedule %s: %w", id, err)
	}
	s.Fires, err = x.scheduleFires(ctx, id, s.Generation)
	return x.withNextFires(s, 5), err
}

// scheduleFires lists the generation's recent fires, newest first, a
// pending one with its last refusal.
func (x *Schedules) scheduleFires(ctx context.Context, id string, generation int64) ([]shardapi.ScheduleFire, error) {
	fires, err := store.ScheduleFires(ctx, x.d.Pool, id, generation, recentFires)
	if err != nil {
		return nil, fmt.Errorf("read fires of %s: %w", id, err)
	}
	return fires, nil
}

// List lists the shard's schedules by id, each with its next
// fire time.
func (x *Schedules) List(ctx context.Context) ([]shardapi.Schedule, error) {
	out, err := store.ListSchedules(ctx, x.d.Pool)
	if err != nil {
		return nil, fmt.Errorf("list schedules: %w", err)
	}
	for i := range out {
		out[i] = x.withNextFires(out[i], 1)
	}
	return out, nil
}

// Delete deletes a schedule: it fires no more, its recorded
// fires go, a fire whose start is still pending is still performed.
func (x *Schedules) Delete(ctx context.Context, id string) error {
	return x.changeSchedule(ctx, id, func(q store.Querier) (int, error) { return store.DeleteSchedule(ctx, q, id) })
}

// Pause stops a schedule's fires until Resume.
func (x *Schedules) Pause(ctx context.Context, id string) error {
	return x.changeSchedule(ctx, id, func(q store.Querier) (int, error) { return store.PauseSchedule(ctx, q, id) })
}

// Resume resumes a paused schedule from now: the nominal times
// that passed while it was paused are not fired.
func (x *Schedules) Resume(ctx context.Context, id string) error {
	now := x.d.Now()
	err := x.changeSchedule(ctx, id, func(q store.Querier) (int, error) { return store.ResumeSchedule(ctx, q, id, now) })
	x.poll.Nudge()
	return err
}

// changeSchedule runs, fenced, a change of schedule id that counts the
// schedules it changed; none is ErrNotFound.
func (x *Schedules) changeSchedule(ctx context.Context, id string, change func(store.Querier) (int, error)) error {
	var n int
	err := x.d.Fence.Do(ctx, func(tx *fence.Tx) (err error) {
		n, err = change(tx)
		return err
	})
	if err != nil {
		return fmt.Errorf("change schedule %s: %w", id, err)
	}
	if n == 0 {
		return &shardapi.NotFoundError{What: "schedule", ID: id}
	}
	return nil
}

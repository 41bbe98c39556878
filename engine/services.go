package engine

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/harvestd/harvest/engine/internal/deferred"
	"github.com/harvestd/harvest/engine/internal/runs"
	"github.com/harvestd/harvest/engine/internal/schedule"
)

// service is what every background service is handed (runs.Service),
// with a logger of its own named name.
func (e *Engine) service(name string) runs.Service {
	return runs.Service{Pool: e.pool, Fence: e.fence, Settle: e.settle, Crash: e.cfg.crashHook,
		Log: e.log.With().Str("service", name).Logger(), Ahead: e.ahead, Poll: e.cfg.PollInterval}
}

// newSchedules makes the schedules (internal/schedule) with their Deps.
func (e *Engine) newSchedules() {
	e.schedules = schedule.New(schedule.Deps{Service: e.service("schedules"), HasWorkflow: e.reg.HasWorkflow}, e.bus.Schedule)
}

// newDeferred makes the deferred starts (internal/deferred) with their
// Deps.
func (e *Engine) newDeferred() {
	e.deferred = deferred.New(deferred.Deps{Service: e.service("deferred"), HasWorkflow: e.reg.HasWorkflow,
		ShardID: e.cfg.ShardID, BatchInputBytes: e.cfg.BatchInputBytes, AfterClose: e.cfg.batchClosedHook}, e.bus.Deferred)
}

// ScheduleFireKey is the idempotency key of a schedule's fire at nominal:
// hv:sched:<schedule id>:<generation>:<nominal time in UTC>.
func ScheduleFireKey(id string, generation int64, nominal time.Time) string {
	return schedule.FireKey(id, generation, nominal)
}

// TriggerFireKey is the idempotency key of a trigger of a schedule that
// carries the client's key: hv:sched:<schedule id>:<generation>:trigger:<key>.
func TriggerFireKey(id string, generation int64, key string) string {
	return schedule.TriggerKey(id, generation, key)
}

// CreateSchedule stores a new schedule; its first fire is its first
// nominal time after now. A schedule id in use is a ConflictError; one
// deleted before comes back with the next generation.
func (e *Engine) CreateSchedule(ctx context.Context, id string, spec ScheduleSpec, paused bool) (Schedule, error) {
	return e.schedules.Create(ctx, id, spec, paused)
}

// GetSchedule reads a schedule with its next fire times and recent fires.
func (e *Engine) GetSchedule(ctx context.Context, id string) (Schedule, error) {
	return e.schedules.Get(ctx, id)
}

// ListSchedules lists the shard's schedules by id, each with its next
// fire time.
func (e *Engine) ListSchedules(ctx context.Context) ([]Schedule, error) { return e.schedules.List(ctx) }

// DeleteSchedule deletes a schedule: it fires no more, its recorded
// fires go, a fire whose start is still pending is still performed.
func (e *Engine) DeleteSchedule(ctx context.Context, id string) error {
	return e.schedules.Delete(ctx, id)
}

// PauseSchedule stops a schedule's fires until ResumeSchedule.
func (e *Engine) PauseSchedule(ctx context.Context, id string) error {
	return e.schedules.Pause(ctx, id)
}

// ResumeSchedule resumes a paused schedule from now: the nominal times
// that passed while it was paused are not fired.
func (e *Engine) ResumeSchedule(ctx context.Context, id string) error {
	return e.schedules.Resume(ctx, id)
}

// TriggerSchedule fires a schedule now, beside its nominal times, under
// its overlap policy; with a client key a repeat finds the recorded fire
// (deduplicated true) and fires nothing.
func (e *Engine) TriggerSchedule(ctx context.Context, id, key string) (ScheduleFire, bool, error) {
	return e.schedules.Trigger(ctx, id, key)
}

// NormalizeSchedule checks spec for this engine's registry and fills its
// defaults, as CreateSchedule does: what a catalog stores.
func (e *Engine) NormalizeSchedule(id string, spec ScheduleSpec) (ScheduleSpec, error) {
	return e.schedules.Normalize(id, spec)
}

// SyncSchedule makes the shard's copy of d (a catalog's definition)
// current and reports whether it changed anything.
func (e *Engine) SyncSchedule(ctx context.Context, d ScheduleDef) (bool, error) {
	return e.schedules.Sync(ctx, d)
}

// Defer records a deferred start and answers its item: the key's open
// debounce or batch item it joined, or a new one.
func (e *Engine) Defer(ctx context.Context, req DeferRequest) (Deferred, error) {
	return e.deferred.Defer(ctx, req)
}

// GetDeferred reads one deferred item; ErrNotFound when there is none.
func (e *Engine) GetDeferred(ctx context.Context, id uuid.UUID) (Deferred, error) {
	return e.deferred.Get(ctx, id)
}

// ListDeferred lists the items not fired or not started yet (pending or
// firing), the soonest first.
func (e *Engine) ListDeferred(ctx context.Context) ([]Deferred, error) { return e.deferred.List(ctx) }

package schedule

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/harvestd/harvest/engine/internal/fence"
	"github.com/harvestd/harvest/engine/internal/loop"
	"github.com/harvestd/harvest/engine/internal/runs"
)

// Deps is what the schedules use; the engine fills it.
type Deps struct {
	// Pool serves the unfenced reads (what is due, a schedule and its
	// fires); Fence runs the fenced transactions.
	Pool  *pgxpool.Pool
	Fence *fence.Fence
	// Settle acts on committed changes (the engine's one after-commit
	// path): the fire loop wakes the outbox through it.
	Settle runs.Settle
	// Crash is the tests' crash hook (nil in real builds).
	Crash loop.Crash
	Log   zerolog.Logger
	// Ahead is the clock's offset: workflow time is this node's time
	// plus Ahead.
	Ahead func() time.Duration
	// Poll is the fire loop's poll tick.
	Poll time.Duration
	// HasWorkflow reports whether the registry runs a workflow.
	HasWorkflow func(name string) bool
}

// now is workflow time by this node's clock.
func (d Deps) now() time.Time { return time.Now().Add(d.Ahead()) }

// Schedules is the shard's schedules: their operations and the fire loop.
type Schedules struct {
	d    Deps
	wake chan struct{}
	// next wakes the fire loop when the earliest schedule is due between
	// its polls.
	next *loop.Wakeup
}

// New makes the schedules, their fire loop woken by wake.
func New(d Deps, wake chan struct{}) *Schedules {
	return &Schedules{d: d, wake: wake, next: loop.NewWakeup(func() { loop.Nudge(wake) })}
}

// wakeOutbox wakes the outbox for the fires just committed.
func (x *Schedules) wakeOutbox(ctx context.Context) {
	x.d.Settle(ctx, runs.Effects{Wake: loop.Outbox}, nil)
}

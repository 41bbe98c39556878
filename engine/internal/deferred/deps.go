package deferred

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/harvestd/harvest/engine/internal/fence"
	"github.com/harvestd/harvest/engine/internal/loop"
	"github.com/harvestd/harvest/engine/internal/runs"
)

// Deps is what the deferred starts use; the engine fills it.
type Deps struct {
	// Pool serves the unfenced reads (what is due, an item, the list);
	// Fence runs the fenced transactions and says whether the shard is
	// owned.
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
	// ShardID is the shard new items' ids are minted on.
	ShardID uint16
	// BatchInputBytes bounds the inputs one batch gathers.
	BatchInputBytes int64
	// AfterClose, when set (tests), runs after a start closes a full
	// batch to make room, in its transaction.
	AfterClose func(context.Context, *fence.Tx) error
}

// now is workflow time by this node's clock.
func (d Deps) now() time.Time { return time.Now().Add(d.Ahead()) }

// Starts is the shard's deferred starts: their requests and the fire
// loop.
type Starts struct {
	d    Deps
	wake chan struct{}
	// next wakes the fire loop when an item is due between its polls.
	next *loop.Wakeup
}

// New makes the deferred starts, their fire loop woken by wake.
func New(d Deps, wake chan struct{}) *Starts {
	return &Starts{d: d, wake: wake, next: loop.NewWakeup(func() { loop.Nudge(wake) })}
}

// wakeOutbox wakes the outbox for the fires just committed.
func (x *Starts) wakeOutbox(ctx context.Context) {
	x.d.Settle(ctx, runs.Effects{Wake: loop.Outbox}, nil)
}

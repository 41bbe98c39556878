package engine

import (
	"context"
	"time"

	"github.com/harvestd/harvest/engine/internal/loop"
)

// Workflow time.
//
// Workflow time is the time of a run's history: its events' timestamps
// (harvest.Context.Now replays them), its timers' fire times, its activity
// retries' due times and its activity attempts' timeouts. It is the
// database's clock moved ahead by Config.Clock's Offset, which is 0 for
// the real clock and grows as a test clock advances. The engine reads the
// offset once per transaction (fence.Tx.Ahead), so a transaction's
// workflow time is its now() plus that offset in every statement, and
// what its workflow code saw is what it stores.
//
// Everything else stays on the database's clock: the shard lease, start
// idempotency claims and their window, activity task locks, completion
// callbacks, gates and sweeps, and the bookkeeping columns of a run
// (created_at, updated_at, completed_at). Because the offset never
// decreases, a row stamped with the database's clock where workflow time
// is compared (a new activity task's scheduled_at, a woken workflow
// task's due time) is never later than workflow time: it is due at once,
// as it is with the real clock.
//
// The one-trip start path (internal/intake/one_trip.go) stamps events with its estimate
// of the database's time plus the offset, and checks the estimate, less
// the offset, against now(): a test clock does not turn it off.

// Clock is the clock workflows run on (see Config.Clock). The engine
// calls it from many goroutines.
type Clock interface {
	// Offset is how far workflow time runs ahead of the database's clock
	// (and of this node's): 0 for the real clock. It must never decrease.
	Offset() time.Duration
	// Advanced returns a channel that is closed the next time Offset
	// grows; nil for a clock that never moves ahead.
	Advanced() <-chan struct{}
}

// RealClock is the default Clock: workflow time is the database's time.
var RealClock Clock = realClock{}

type realClock struct{}

func (realClock) Offset() time.Duration     { return 0 }
func (realClock) Advanced() <-chan struct{} { return nil }

// ahead is the clock's offset to the microsecond, the database's
// precision, so that a time computed here equals the one stored.
func (e *Engine) ahead() time.Duration {
	return e.cfg.Clock.Offset().Truncate(time.Microsecond)
}

// clockLoop wakes every loop each time the clock advances: timers,
// activity retries and delayed starts may have come due. It returns at
// once for a clock that never advances.
func (e *Engine) clockLoop(ctx context.Context) {
	for {
		ch := e.cfg.Clock.Advanced()
		if ch == nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-ch:
		}
		loop.Nudge(e.bus.Timer)
		e.act.WakeDue()
		loop.Nudge(e.bus.Workflow)
		loop.Nudge(e.bus.Schedule)
	}
}

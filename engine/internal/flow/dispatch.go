package flow

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/harvestd/harvest/engine/internal/fence"
	"github.com/harvestd/harvest/engine/internal/loop"
	"github.com/harvestd/harvest/engine/internal/runs"
	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/internal/metrics"
)

// dispatchBatch is the most queued runs one transaction promotes.
const dispatchBatch = 512

// CrashBeforeCommit: queued runs were promoted, or running runs adopted,
// before the commit (a crash leaves them QUEUED, or not adopted, for the
// next owner).
const CrashBeforeCommit loop.CrashPoint = "flow.before_commit"

// Deps is what the dispatcher uses; the engine fills it.
type Deps struct {
	runs.Service
	// Limits lists the concurrency limits in force.
	Limits func() store.Limits
}

// Dispatcher promotes the shard's queued runs.
type Dispatcher struct {
	d    Deps
	poll *loop.Poller
	// maybe: some run may be QUEUED. Cleared when a look finds none, set
	// when a commit queues runs, so that with nothing queued neither a
	// poll tick nor a closing run costs a statement.
	maybe atomic.Bool
	// adopted names the limits whose running runs were adopted last, at
	// adoptedAt (adopt); only the dispatcher's goroutine uses them.
	adopted   string
	adoptedAt time.Time
}

// New makes the dispatcher, woken by wake.
func New(d Deps, wake chan struct{}) *Dispatcher {
	return &Dispatcher{d: d, poll: loop.NewPoller(wake, d.Poll, d.Log)}
}

// Look reads whether some run is queued, for a lease just taken (before
// Run: another owner may have queued runs meanwhile).
func (x *Dispatcher) Look(ctx context.Context) {
	queued, err := store.AnyQueued(ctx, x.d.Pool)
	x.maybe.Store(queued || err != nil)
}

// Run promotes queued runs until ctx ends.
func (x *Dispatcher) Run(ctx context.Context) { x.poll.Run(ctx, x.dispatch) }

// Queued wakes the dispatcher for runs a commit queued.
func (x *Dispatcher) Queued() {
	x.maybe.Store(true)
	x.poll.Nudge()
}

// Freed wakes the dispatcher for runs that closed (limited ones free
// slots), unless nothing is queued.
func (x *Dispatcher) Freed() {
	if x.maybe.Load() {
		x.poll.Nudge()
	}
}

// dispatch promotes up to dispatchBatch queued runs; true if more may
// wait for free slots.
func (x *Dispatcher) dispatch(ctx context.Context) (bool, error) {
	if err := x.adopt(ctx); err != nil {
		return false, err
	}
	if !x.maybe.Load() {
		return false, nil
	}
	// Cleared before the look, never after it: a commit that queues runs
	// after the look began sets it again (Queued), and the look's answer
	// must not undo that.
	x.maybe.Store(false)
	queued, err := store.AnyQueued(ctx, x.d.Pool)
	if err != nil || queued {
		x.maybe.Store(true)
	}
	if !queued {
		return false, err
	}
	lim := x.d.Limits()
	var (
		ids   []store.Promoted
		asked int64
	)
	err = x.d.Fence.Do(ctx, func(tx *fence.Tx) (err error) {
		if asked, err = askKeepers(ctx, tx, lim); err != nil {
			return err
		}
		if ids, err = store.PromoteQueued(ctx, tx, lim, dispatchBatch); err != nil {
			return fmt.Errorf("promote queued runs: %w", err)
		}
		if len(ids) == 0 && asked == 0 {
			return nil
		}
		return x.d.Crash.At(ctx, CrashBeforeCommit)
	})
	if err != nil {
		return false, err
	}
	if asked > 0 {
		x.d.WakeOutbox(ctx)
	}
	for _, p := range ids {
		metrics.FlowSlots.WithLabelValues(p.WorkflowName, "dispatch").Inc()
	}
	if len(ids) > 0 {
		x.d.Log.Debug().Int("runs", len(ids)).Msg("queued runs promoted")
		x.d.Settle(ctx, runs.Effects{Wake: loop.Workflow}, nil)
	}
	return len(ids) == dispatchBatch || asked == dispatchBatch, nil
}

// askKeepers makes the queued runs of the workflows limited across the
// cluster ask their keys' keepers for slots: each run marked as the
// keeper's and its acquire's outbox row, in the dispatcher's transaction
// (store.AskKeepers). The grant comes back as a signal, which makes the
// run RUNNING in its own transaction (runs.Changes.GrantSlot).
func askKeepers(ctx context.Context, tx *fence.Tx, lim store.Limits) (int64, error) {
	if len(lim.Cluster) == 0 {
		return 0, nil
	}
	n, err := store.AskKeepers(ctx, tx, lim, dispatchBatch)
	if err != nil {
		return 0, fmt.Errorf("ask keepers: %w", err)
	}
	return n, nil
}

// adopt makes the running runs of workflows that became limited (a limit
// set at run time, a new build, this owner's first look) count against
// their limits: they hold slots from then on (store.AdoptRunning), so new
// starts wait until their keys are below the limits. It runs once per set
// of limits, and looks at most once per poll interval.
func (x *Dispatcher) adopt(ctx context.Context) error {
	if !x.adoptedAt.IsZero() && time.Since(x.adoptedAt) < x.d.Poll {
		return nil // a dispatch per closing run must not rebuild the limits each time
	}
	x.adoptedAt = time.Now()
	lim := x.d.Limits()
	sig := strings.Join(lim.Names, "\x00") + "\x01" + strings.Join(lim.Paths, "\x00") + "\x01" +
		strings.Join(lim.Cluster, "\x00") + "\x01" + strings.Join(lim.ClusterPaths, "\x00")
	if sig == x.adopted {
		return nil
	}
	if len(lim.Names) > 0 || len(lim.Cluster) > 0 {
		var n, keepers int64
		err := x.d.Fence.Do(ctx, func(tx *fence.Tx) (err error) {
			if n, err = adoptRunning(ctx, tx, lim); err != nil {
				return err
			}
			if keepers, err = adoptKeepers(ctx, tx, lim); err != nil || n+keepers == 0 {
				return err
			}
			return x.d.Crash.At(ctx, CrashBeforeCommit)
		})
		if err != nil {
			return fmt.Errorf("adopt running runs: %w", err)
		}
		if n+keepers > 0 {
			x.d.Log.Info().Int64("runs", n).Int64("keepers_runs", keepers).Msg("running runs of newly limited workflows hold slots")
		}
		if keepers > 0 {
			x.d.WakeOutbox(ctx)
		}
	}
	x.adopted = sig
	return nil
}

// adoptRunning adopts the running runs of the workflows limited per
// shard (store.AdoptRunning).
func adoptRunning(ctx context.Context, tx *fence.Tx, lim store.Limits) (int64, error) {
	if len(lim.Names) == 0 {
		return 0, nil
	}
	return store.AdoptRunning(ctx, tx, lim)
}

// adoptKeepers makes the keepers of the workflows limited across the
// cluster count their running runs no keeper counts (store.AdoptKeepers).
func adoptKeepers(ctx context.Context, tx *fence.Tx, lim store.Limits) (int64, error) {
	if len(lim.Cluster) == 0 {
		return 0, nil
	}
	return store.AdoptKeepers(ctx, tx, lim)
}

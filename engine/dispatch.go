package engine

import (
	"context"
	"time"

	"github.com/harvestd/harvest/engine/internal/runs"
	"github.com/harvestd/harvest/engine/internal/store"
)

// Direct dispatch of new activity tasks.
//
// A batch that schedules activity tasks (a workflow task, an eager task of
// a completion batch, a start's first task) inserts as many of them as the
// engine has free activity slots already claimed — running, attempt 1,
// stamped with the lease epoch and locked as claimActivities locks them —
// and runs them as soon as it commits, with no claim transaction between.
// If the batch fails nothing was claimed and the slots go back. If the
// engine stops before an attempt records its outcome, the attempt is
// reclaimed like any other of a lost owner.
//
// The activity loop keeps a share of the slots (dispatchReserve) for the
// tasks that wait in the table (retries, tasks of a previous owner, tasks
// that found no slot), so that new work cannot starve them.

// activitySlots bounds the running activity attempts of an engine: the
// activity loop's claims and direct dispatch take from one pool.
type activitySlots struct {
	ch chan struct{}
}

func newActivitySlots(n int) *activitySlots {
	return &activitySlots{ch: make(chan struct{}, n)}
}

// take takes up to n free slots without waiting, leaving keep free, and
// returns how many it took.
func (s *activitySlots) take(n, keep int) int {
	got := 0
	for got < n && s.free() > keep {
		select {
		case s.ch <- struct{}{}:
			got++
		default:
			return got
		}
	}
	return got
}

// free is how many slots are free now.
func (s *activitySlots) free() int { return cap(s.ch) - len(s.ch) }

// put returns n slots; returning a slot not taken is a bug.
func (s *activitySlots) put(n int) {
	for range n {
		select {
		case <-s.ch:
		default:
			panic("engine: activity slot returned twice")
		}
	}
}

// dispatchReserve is how many slots direct dispatch leaves to the loop.
func (e *Engine) dispatchReserve() int { return max(1, e.cfg.ActivityWorkers/4) }

// reserveDispatch takes slots for up to n of a batch's new tasks (nil when
// none is free).
func (e *Engine) reserveDispatch(n int) *runs.Direct {
	got := e.actSlots.take(n, e.dispatchReserve())
	if got == 0 {
		return nil
	}
	return &runs.Direct{Slots: got, Epoch: e.epoch.Load(), Since: time.Now()}
}

// settleTasks ends the activity tasks of a batch whose transaction has
// ended (err nil: committed): it runs the directly dispatched ones in
// their slots, returns the slots it does not use, and wakes the activity
// loop for the tasks left in the table. ctx is the engine's run: the
// attempts outlive the batch.
func (e *Engine) settleTasks(ctx context.Context, fx runs.Effects, err error) {
	var run []store.ClaimedTask
	if d := fx.Direct; d != nil {
		if err == nil && ctx.Err() == nil {
			run = d.Tasks // else not claimed, or stopping: the next owner reclaims them
		}
		e.actSlots.put(d.Slots - len(run))
	}
	if err == nil && fx.Tasks > len(run) {
		e.actPending.Store(true)
		e.nudge(e.actWake)
	}
	for _, t := range run {
		e.loops.Add(1) // the batch's loop is counted, so Stop cannot be past Wait
		go func() {
			defer e.loops.Done()
			e.runActivity(ctx, claimedTask{ClaimedTask: t, Since: fx.Direct.Since}, e.releaseSlot)
		}()
	}
}

// releaseSlot frees one activity slot and wakes the loop to fill it.
func (e *Engine) releaseSlot() {
	e.actSlots.put(1)
	e.nudge(e.actWake)
}

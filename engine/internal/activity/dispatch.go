package activity

import (
	"context"
	"time"

	"github.com/harvestd/harvest/engine/internal/loop"
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

// TakeSlots takes up to n free slots without waiting and returns how
// many it took (a test holds slots with it; ReleaseSlot gives one back).
func (a *Attempts) TakeSlots(n int) int { return a.slots.take(n, 0) }

// BusySlots is how many slots are held: attempts running or dispatched.
func (a *Attempts) BusySlots() int { return len(a.slots.ch) }

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
func (a *Attempts) dispatchReserve() int { return max(1, a.d.Workers/4) }

// Reserve takes slots for up to n of a batch's new tasks (nil when
// none is free).
func (a *Attempts) Reserve(n int) *runs.Direct {
	got := a.slots.take(n, a.dispatchReserve())
	if got == 0 {
		return nil
	}
	return &runs.Direct{Slots: got, Epoch: a.d.Epoch(), Since: time.Now(), Limited: a.limitedNames()}
}

// SettleTasks ends the activity tasks of a batch whose transaction has
// ended (err nil: committed): it runs the directly dispatched ones in
// their slots, returns the slots it does not use, and wakes the activity
// loop for the tasks left in the table. ctx is the engine's run: the
// attempts outlive the batch.
func (a *Attempts) SettleTasks(ctx context.Context, fx runs.Effects, err error) {
	var run []store.ClaimedTask
	if d := fx.Direct; d != nil {
		if err == nil && ctx.Err() == nil {
			run = d.Tasks // else not claimed, or stopping: the next owner reclaims them
		}
		a.slots.put(d.Slots - len(run))
	}
	if err == nil && fx.Tasks > len(run) {
		a.pending.Store(true)
		loop.Nudge(a.d.Wake)
	}
	for _, t := range run {
		a.d.Loops.Add(1) // the batch's loop is counted, so Stop cannot be past Wait
		go func() {
			defer a.d.Loops.Done()
			a.runActivity(ctx, Task{ClaimedTask: t, Since: fx.Direct.Since}, a.ReleaseSlot)
		}()
	}
}

// ReleaseSlot frees one activity slot and wakes the loop to fill it.
func (a *Attempts) ReleaseSlot() {
	a.slots.put(1)
	loop.Nudge(a.d.Wake)
}

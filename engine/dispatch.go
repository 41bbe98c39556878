package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

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

// dispatch is one batch's directly dispatched tasks.
type dispatch struct {
	slots int           // slots taken for the batch
	epoch int64         // the lease epoch the claims carry
	since time.Time     // before the claims: their attempts' timeouts count from it
	tasks []claimedTask // the claimed tasks, read back from the insert
}

// reserveDispatch takes slots for up to n of a batch's new tasks (nil when
// none is free).
func (e *Engine) reserveDispatch(n int) *dispatch {
	got := e.actSlots.take(n, e.dispatchReserve())
	if got == 0 {
		return nil
	}
	return &dispatch{slots: got, epoch: e.epoch.Load(), since: time.Now()}
}

// settleTasks ends the activity tasks of a batch whose transaction has
// ended (err nil: committed): it runs the directly dispatched ones in
// their slots, returns the slots it does not use, and wakes the activity
// loop for the tasks left in the table. ctx is the engine's run: the
// attempts outlive the batch.
func (e *Engine) settleTasks(ctx context.Context, w *writeSet, err error) {
	var run []claimedTask
	if d := w.direct; d != nil {
		if err == nil && ctx.Err() == nil {
			run = d.tasks // else not claimed, or stopping: the next owner reclaims them
		}
		e.actSlots.put(d.slots - len(run))
	}
	if err == nil && len(w.tasks.ids) > len(run) {
		e.actPending.Store(true)
		e.nudge(e.actWake)
	}
	for _, t := range run {
		e.loops.Add(1) // the batch's loop is counted, so Stop cannot be past Wait
		go func() {
			defer e.loops.Done()
			e.runActivity(ctx, t, e.releaseSlot)
		}()
	}
}

// releaseSlot frees one activity slot and wakes the loop to fill it.
func (e *Engine) releaseSlot() {
	e.actSlots.put(1)
	e.nudge(e.actWake)
}

// queueTaskInsert queues the insert of the set's activity tasks: with d,
// the first d.slots of them (of runs the set leaves open) claimed and read
// back into d.tasks; without, every task pending.
func (w *writeSet) queueTaskInsert(b *pgx.Batch, d *dispatch) {
	t := &w.tasks
	cols := store.NewTasks{IDs: t.ids, ActivityIDs: t.activityIDs, Names: t.names, Queues: t.queues, Keys: t.keys,
		Opts: t.opts, Inputs: t.inputs, CloseMS: t.closeMS}
	claim := make([]bool, len(t.ids))
	if d == nil {
		store.QueueInsertTasks(b, cols, claim, 0, leaseGrace.Milliseconds(), micros(w.ahead), nil)
		return
	}
	at := w.claimFirst(claim, d.slots)
	store.QueueInsertTasks(b, cols, claim, d.epoch, leaseGrace.Milliseconds(), micros(w.ahead), func(r store.InsertedTask) error {
		if !r.Claimed {
			return nil
		}
		i, ok := at[taskKey{r.ExecutionID, r.ActivityID}]
		if !ok {
			return fmt.Errorf("direct dispatch: task %s/%s was not asked for", r.ExecutionID, r.ActivityID)
		}
		var ct claimedTask
		ct.TaskID = r.TaskID
		t.fill(&ct, i)
		ct.CloseDeadline, ct.ClaimedAt, ct.Since = r.Deadline, r.Now, d.since
		d.tasks = append(d.tasks, ct)
		return nil
	})
}

// claimFirst flags in claim the first slots tasks of the set's runs it
// leaves open, and returns their indexes by run and activity id.
func (w *writeSet) claimFirst(claim []bool, slots int) map[taskKey]int {
	t := &w.tasks
	closed := make(map[uuid.UUID]bool, len(w.closed))
	for _, id := range w.closed {
		closed[id] = true
	}
	for i, n := 0, 0; i < len(t.ids) && n < slots; i++ {
		if !closed[t.ids[i]] {
			claim[i] = true
			n++
		}
	}
	at := make(map[taskKey]int, slots)
	for i, c := range claim {
		if c {
			at[taskKey{t.ids[i], t.activityIDs[i]}] = i
		}
	}
	return at
}

type taskKey struct {
	id         uuid.UUID
	activityID string
}

// fill sets what row i of the set says of a claimed attempt.
func (t *activityRows) fill(ct *claimedTask, i int) {
	ct.ExecutionID, ct.WorkflowName, ct.WorkflowID = t.ids[i], t.wfNames[i], t.wfIDs[i]
	ct.ActivityID, ct.Name, ct.Key, ct.Attempt = t.activityIDs[i], t.names[i], t.keys[i], 1
	if t.inputs[i] != nil {
		ct.Input = json.RawMessage(*t.inputs[i])
	}
	ct.Options = t.options[i]
}

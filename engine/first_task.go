package engine

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/store"
)

// First workflow tasks of new runs (eager start).
//
// A run a start batch creates is due at once. Instead of leaving its first
// workflow task to a workflow worker (another transaction: claim, history
// read, UPDATE of the run), the batch runs the task on the run's one-event
// history before it inserts the run, and inserts the run as the task left
// it: its next event id, and its state, output and error if the task
// closed it. The task's events, activity tasks and timers join the batch's
// writes, so a start answers with the run past its first step, in one
// commit. A delayed start is left to the workflow loop, and so is a task
// that fails: its run is inserted due, and the failure is recorded as the
// workflow loop records one (attempt, last error, backoff).
//
// Workflow code runs inside the batch's transaction and on the shard's one
// start batcher, so a batch gives its first tasks firstTaskBudget in all:
// a task cut short by it, and every task after it, is left to the workflow
// loop (with its full WorkflowTaskTimeout) as if never tried. So is a task
// that continues as new at once: its hand-over (chain.go) writes a second
// run, which the batch's run columns have no room for.

// firstTaskBudget bounds the workflow code one start batch runs.
const firstTaskBudget = 250 * time.Millisecond

// firstTasks is what the first tasks of one start batch write, and what
// the engine does once the batch commits.
type firstTasks struct {
	w     *writeSet
	fails *pgx.Batch // failed tasks' records, after the runs' inserts
	// closed are the runs the tasks closed; left counts the runs inserted
	// with their first task still due.
	closed []uuid.UUID
	left   int
}

// runFirstTasks runs the first workflow task of every new run due now,
// folds each task's effect on its run into runs, and keeps the rest of its
// writes for queue. dbNow is the transaction's start in workflow time: the
// created_at of the events the batch appends; ahead is its clock offset.
func (e *Engine) runFirstTasks(ctx context.Context, runs *runColumns, dbNow time.Time, ahead time.Duration, early bool) (*firstTasks, error) {
	f := &firstTasks{w: newWriteSet(), fails: &pgx.Batch{}}
	f.w.ahead = ahead
	f.w.stamps = make(map[uuid.UUID]time.Time, runs.len())
	f.w.newRuns, f.w.newRunCallbacks = true, runs.callbacks
	at := make(map[uuid.UUID]int, runs.len())
	budget, cancel := context.WithTimeout(ctx, firstTaskBudget)
	defer cancel()
	for i, id := range runs.ids {
		runs.at[i] = dbNow
		pre := runs.early[i]
		if !early || (pre != nil && pre.at.Before(dbNow.Add(-earlyStale))) {
			pre = nil
		}
		if runs.dueAt[i] != nil || (budget.Err() != nil && !pre.done()) {
			f.left++
			continue
		}
		ex := &store.Exec{ID: id, WorkflowName: runs.names[i], WorkflowID: runs.wids[i], State: StateRunning,
			NextEventID: 1, CreatedAt: dbNow, ChainID: id}
		var (
			res    harvest.TaskResult
			runErr error
		)
		if pre.done() {
			runs.at[i], ex.CreatedAt, res = pre.at, pre.at, pre.res
		} else {
			started := harvest.Event{EventID: 0, Type: harvest.EventType(runs.eventType[i]),
				Data: json.RawMessage(runs.eventData[i]), Timestamp: dbNow}
			res, runErr = e.runTask(budget, claimedWorkflowTask{ex: ex, dbNow: dbNow, history: []harvest.Event{started}})
		}
		f.w.stamps[id] = runs.at[i]
		switch {
		case runErr != nil && budget.Err() != nil:
			f.left++ // cut short by the budget: the workflow loop runs it
			continue
		case runErr != nil:
			e.queueFailWorkflowTask(f.fails, ex, 0, runErr)
			f.left++
			continue
		case continuesAsNew(res):
			f.left++ // the hand-over inserts a run of its own: the workflow loop runs it
			continue
		}
		if err := queueCommands(f.w, ex, res, runs.at[i]); err != nil {
			return nil, err
		}
		at[id] = i
		runs.ran[i] = true
		if res.Closed {
			f.closed = append(f.closed, id)
			f.w.newRunsReport = f.w.newRunsReport || isChildKey(runs.keys[i])
		}
	}
	f.w.addStarted(runs)
	if n := len(f.w.tasks.ids); n > 0 {
		f.w.direct = e.reserveDispatch(n)
	}
	for _, u := range f.w.takeExecs() {
		i := at[u.id]
		runs.next[i] = u.next
		if u.close {
			runs.states[i], runs.outputs[i], runs.errs[i] = u.state, jsonText(u.output), jsonText(u.errInfo)
			runs.holdsSlot[i] = !u.releaseSlot
		}
	}
	return f, nil
}

// addStarted adds every new run's WorkflowStarted event (event 0) to the
// set's appends, stamped with its run's time: one INSERT carries them with
// the events of the first tasks.
func (w *writeSet) addStarted(runs *runColumns) {
	for i, id := range runs.ids {
		w.stamps[id] = runs.at[i]
		w.events.ids = append(w.events.ids, id)
		w.events.nums = append(w.events.nums, 0)
		w.events.types = append(w.events.types, runs.eventType[i])
		w.events.data = append(w.events.data, runs.eventData[i])
	}
}

// isChildKey reports whether a run's idempotency key is a child's.
func isChildKey(key *string) bool {
	if key == nil {
		return false
	}
	_, _, ok := harvest.ParseChildStartKey(*key)
	return ok
}

// queue queues the tasks' writes; the runs' inserts are queued already.
func (f *firstTasks) queue(b *pgx.Batch) {
	f.w.queue(b)
	b.QueuedQueries = append(b.QueuedQueries, f.fails.QueuedQueries...)
}

// committed wakes whoever has work from the committed batch: the waiters
// of closed runs, the workflow loop for runs left due, the timer loop for
// the timers the tasks started (settleTasks wakes the activity loop).
func (f *firstTasks) committed(e *Engine) {
	if f == nil {
		return
	}
	if len(f.closed) > 0 {
		e.closed.fire(f.closed...)
	}
	e.wakeCallbacks(f.w)
	if f.left > 0 {
		e.nudge(e.wfWake)
	}
	if len(f.w.timers.ids) > 0 {
		e.nudge(e.tmWake)
	}
}

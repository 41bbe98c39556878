package intake

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/loop"
	"github.com/harvestd/harvest/engine/internal/runs"
	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/internal/wftask"
	"github.com/harvestd/harvest/engine/shardapi"
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
	ch    *runs.Changes
	fails *pgx.Batch // failed tasks' records, after the runs' inserts
	// left counts the runs inserted with their first task still due,
	// queued those that wait for a slot (their first task runs once the
	// flow dispatcher gives them one).
	left, queued int
}

// runFirstTasks runs the first workflow task of every new run due now,
// folds each task's effect on its run into cols, and keeps the rest of its
// writes for queue. dbNow is the transaction's start in workflow time: the
// created_at of the events the batch appends; ahead is its clock offset.
func (in *Intake) runFirstTasks(ctx context.Context, cols *runColumns, dbNow time.Time, ahead time.Duration, early bool) (*firstTasks, error) {
	f := &firstTasks{ch: runs.New(), fails: &pgx.Batch{}}
	f.ch.Ahead = ahead
	f.ch.Stamps = make(map[uuid.UUID]time.Time, cols.len())
	f.ch.NewRuns, f.ch.NewRunCallbacks = true, cols.callbacks
	at := make(map[uuid.UUID]int, cols.len())
	budget, cancel := context.WithTimeout(ctx, firstTaskBudget)
	defer cancel()
	for i, id := range cols.ids {
		ran, err := in.firstTask(budget, f, cols, i, dbNow, early)
		if err != nil {
			return nil, err
		}
		if ran {
			at[id] = i
		}
	}
	f.ch.AddStarted(cols.ids, cols.at, cols.eventType, cols.eventData)
	if n := f.ch.TaskCount(); n > 0 {
		f.ch.Direct = in.d.Reserve(n)
	}
	f.fold(cols, at)
	return f, nil
}

// firstTask runs the first task of run i of cols, or takes the one its
// start ran early, and applies it to f's changes; ran is false when the
// run is left to the workflow loop (delayed, out of budget, failed, or
// continued as new).
func (in *Intake) firstTask(budget context.Context, f *firstTasks, cols *runColumns, i int, dbNow time.Time, early bool) (ran bool, err error) {
	id := cols.ids[i]
	cols.at[i] = dbNow
	pre := cols.early[i]
	if !early || (pre != nil && pre.at.Before(dbNow.Add(-EarlyStale))) {
		pre = nil
	}
	if cols.states[i] == shardapi.StateQueued {
		f.queued++
		return false, nil
	}
	if cols.dueAt[i] != nil || (budget.Err() != nil && !pre.done()) {
		f.left++
		return false, nil
	}
	ex := &store.Exec{ID: id, WorkflowName: cols.names[i], WorkflowID: cols.wids[i], State: shardapi.StateRunning,
		NextEventID: 1, CreatedAt: dbNow, ChainID: id}
	var (
		res    harvest.TaskResult
		runErr error
	)
	if pre.done() {
		cols.at[i], ex.CreatedAt, res = pre.at, pre.at, pre.res
	} else {
		started := harvest.Event{EventID: 0, Type: harvest.EventType(cols.eventType[i]),
			Data: json.RawMessage(cols.eventData[i]), Timestamp: dbNow}
		res, runErr = in.d.WF.RunTask(budget, wftask.Claimed{Ex: ex, DBNow: dbNow, History: []harvest.Event{started}})
	}
	f.ch.Stamps[id] = cols.at[i]
	switch {
	case runErr != nil && budget.Err() != nil:
		f.left++ // cut short by the budget: the workflow loop runs it
		return false, nil
	case runErr != nil:
		in.d.WF.QueueFail(f.fails, ex, 0, runErr)
		f.left++
		return false, nil
	case runs.ContinuesAsNew(res):
		f.left++ // the hand-over inserts a run of its own: the workflow loop runs it
		return false, nil
	}
	if err := f.ch.ApplyTask(ex, res, cols.at[i], in.d.Route); err != nil {
		return false, err
	}
	cols.ran[i] = true
	if res.Closed {
		f.ch.NewRunsReport = f.ch.NewRunsReport || isChildKey(cols.keys[i])
	}
	return true, nil
}

// fold folds the updates of the runs whose first task ran (at: their
// index in cols) into cols: their next event id, and their state, output,
// error and slot if the task closed them.
func (f *firstTasks) fold(cols *runColumns, at map[uuid.UUID]int) {
	for _, u := range f.ch.TakeUpdates() {
		i := at[u.ID]
		cols.next[i] = u.Next
		if u.Closes {
			cols.states[i], cols.outputs[i], cols.errs[i] = u.State, runs.JSONText(u.Output), runs.JSONText(u.Err)
			cols.holdsSlot[i] = !u.ReleaseSlot
		}
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
	f.ch.Queue(b)
	b.QueuedQueries = append(b.QueuedQueries, f.fails.QueuedQueries...)
}

// effects is what the batch asks of the engine once it ends: the
// changes' effects, and the workflow loop for runs left due (none when
// the batch ran no first tasks).
func (f *firstTasks) effects() runs.Effects {
	if f == nil {
		return runs.Effects{}
	}
	fx := f.ch.Effects()
	fx.Wake.Add(loop.Workflow, f.left > 0)
	fx.Wake.Add(loop.Flow, f.queued > 0)
	return fx
}

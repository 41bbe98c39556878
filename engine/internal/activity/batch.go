package activity

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/fence"
	"github.com/harvestd/harvest/engine/internal/loop"
	"github.com/harvestd/harvest/engine/internal/runs"
	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/internal/wftask"
	"github.com/harvestd/harvest/engine/shardapi"
	"github.com/harvestd/harvest/internal/metrics"
)

// Group commit of activity completions.
//
// A successful attempt's completion is handed to the engine's completion
// batcher, whose loops take whatever completions are queued (up to
// completionBatchMax, never waiting for more) and record them in one
// fenced transaction: the executions and tasks locked in one round trip
// (in id order), the runs' histories read in another, then each run's
// workflow task runs at once on its history plus its new ActivityCompleted
// events, and the events, the tasks' commands and the deleted activity
// tasks are written in a third round trip, one commit. (An eager task that
// fails is retried by the workflow loop with backoff, its attempt count
// starting again from one.) Failures, retries and timeouts of activities
// take the single path (finishActivity), and so does every completion of a
// batch that fails as a whole.

const (
	// completionBatchMax is the most completions one transaction records.
	completionBatchMax = 128
	// completionLoops is how many completion transactions may be in
	// flight: each runs workflow code too (eager workflow tasks). Their
	// runs and tasks are locked in id order, so they never deadlock.
	completionLoops = 4
)

// completion is one successful attempt waiting for its batch.
type completion struct {
	t   Task
	out json.RawMessage
	// recorded answers true when the batch committed (the attempt was
	// recorded, or was stale and ignored), false to take the single path.
	recorded chan bool
}

// RunCompletions starts the completion batcher of this run (spawned
// through Deps.Spawn).
func (a *Attempts) RunCompletions(ctx context.Context) {
	g := loop.NewBatcher[*completion](completionBatchMax)
	a.completions.Store(g)
	a.d.Spawn(ctx, func(ctx context.Context) {
		g.Run(ctx, completionLoops, func(batch []*completion) {
			ok := a.completeBatch(ctx, batch) == nil
			for _, c := range batch {
				c.recorded <- ok
			}
		})
	})
}

// recordCompletion records a successful attempt through the batcher. If
// the engine stops first nothing is recorded: the next owner reclaims the
// attempt, as after a crash.
func (a *Attempts) recordCompletion(ctx context.Context, t Task, out json.RawMessage) {
	g := a.completions.Load()
	if g == nil {
		a.finishActivity(ctx, t, out, nil, "")
		return
	}
	c := &completion{t: t, out: out, recorded: make(chan bool, 1)}
	if g.Submit(ctx, c) != nil {
		return
	}
	if !<-c.recorded {
		a.finishActivity(ctx, t, out, nil, "")
	}
}

// completeBatch records the completions in one transaction and runs the
// workflow task each completion makes due in the same transaction (eager
// workflow tasks): the runs are locked already, so their histories are
// read once, the ActivityCompleted events and the tasks' commands are
// written together, and no workflow worker has to claim them. Attempts no
// longer current (reclaimed, or their run closed) are dropped as in
// finishActivity.
func (a *Attempts) completeBatch(runCtx context.Context, batch []*completion) error {
	ctx, cancel := context.WithTimeout(runCtx, a.d.LeaseTTL)
	defer cancel()
	var (
		execIDs []uuid.UUID
		taskIDs []int64
		dbNow   time.Time
	)
	for _, c := range batch {
		execIDs = append(execIDs, c.t.ExecutionID)
		taskIDs = append(taskIDs, c.t.TaskID)
	}
	slices.Sort(taskIDs)
	exs := make(map[uuid.UUID]*store.Exec, len(execIDs))
	attempts := make(map[int64]int, len(taskIDs))                // running tasks' attempts
	slots := make(map[int64]*harvest.ActivitySlot, len(taskIDs)) // and the slots they hold
	queue := func(b *pgx.Batch) {
		store.QueueLockExecs(b, execIDs, exs)
		store.QueueLockRunningTasks(b, taskIDs, func(id int64, attempt int, slot *harvest.ActivitySlot) {
			attempts[id] = attempt
			if slot != nil {
				slots[id] = slot
			}
		})
		// now() is the transaction's start: with the clock's offset, the
		// created_at of every event it appends, which the eager tasks see.
		store.QueueNow(b, &dbNow)
	}
	var (
		completed int
		w         = wftask.NewBatch()
	)
	err := a.d.Fence.DoBatch(ctx, queue, func(tx *fence.Tx) error {
		dbNow = dbNow.Add(tx.Ahead()) // workflow time
		completed = 0
		var (
			done   []int64
			tasks  []wftask.Claimed
			events = make(map[uuid.UUID][]harvest.Command)
		)
		for _, c := range batch {
			ex, running := exs[c.t.ExecutionID], false
			if attempt, ok := attempts[c.t.TaskID]; ok {
				running = attempt == c.t.Attempt
			}
			if ex == nil || !running {
				continue // a stale attempt: its successor records the outcome
			}
			done = append(done, c.t.TaskID)
			if shardapi.IsTerminal(ex.State) {
				continue
			}
			if _, ok := events[ex.ID]; !ok {
				tasks = append(tasks, wftask.Claimed{Ex: ex, DBNow: dbNow})
			}
			events[ex.ID] = append(events[ex.ID], harvest.NewCommand(harvest.EventActivityCompleted,
				harvest.ActivityCompletedData{ActivityID: c.t.ActivityID, Output: runs.InputOrNull(c.out), Attempt: c.t.Attempt,
					Slot: slots[c.t.TaskID]}))
			completed++
		}
		a.d.WF.TakeLive(w, tasks)
		if err := wftask.LoadHistories(ctx, tx, tasks); err != nil {
			return err
		}
		// The completions' events come first: the tasks see them, and
		// their own commands follow them in the same write set.
		b := &pgx.Batch{}
		if len(done) > 0 {
			store.QueueDeleteTasks(b, done)
		}
		for i, t := range tasks {
			tasks[i].History = appendToHistory(t.History, t.Ex.NextEventID, events[t.Ex.ID], dbNow)
			w.AppendEvents(t.Ex, events[t.Ex.ID], false)
		}
		return a.d.WF.RunAndWrite(ctx, tx, b, w, tasks)
	})
	a.d.Settle(runCtx, w.Effects(), err)
	a.d.WF.SettleLive(w, err)
	if err != nil {
		if ctx.Err() == nil {
			a.d.Log.Debug().Err(err).Int("completions", len(batch)).Msg("completion batch failed, its completions run alone")
		}
		return err
	}
	if completed > 0 {
		metrics.ActivityAttempts.WithLabelValues("completed").Add(float64(completed))
	}
	return nil
}

// appendToHistory adds the commands, as the events they become when
// appended from event id next at time at, to a loaded history.
func appendToHistory(history []harvest.Event, next int64, cmds []harvest.Command, at time.Time) []harvest.Event {
	for i, c := range cmds {
		history = append(history, harvest.Event{EventID: next + int64(i), Type: c.Type, Data: c.Data, Timestamp: at})
	}
	return history
}

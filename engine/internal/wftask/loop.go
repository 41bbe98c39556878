package wftask

import (
	"context"
	"fmt"
	"time"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/fence"
	"github.com/harvestd/harvest/engine/internal/loop"
	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
	"github.com/harvestd/harvest/internal/metrics"
	"github.com/jackc/pgx/v5"
)

// Run runs due workflow tasks until ctx ends, up to Deps.Batch of them
// per transaction; after a failed transaction
// it takes one task at a time for a while, so that one task whose writes
// fail cannot hold others back.
func (r *Runner) Run(ctx context.Context) {
	solo := 0 // steps left that take one task
	loop.Drain(ctx, r.d.Wake, r.d.Poll, r.d.Log, func(ctx context.Context) (bool, error) {
		limit := r.d.Batch
		if solo > 0 {
			limit, solo = 1, solo-1
		}
		found, err := r.runTasks(ctx, limit)
		if err != nil && limit > 1 {
			solo = limit
		}
		return found, err
	})
}

// runTasks claims up to limit due workflow tasks and runs them
// under their executions' row locks, in one fenced transaction: one read
// of their histories, one round trip for all their writes, one commit.
// more says it found a full batch: more tasks may be due.
func (r *Runner) runTasks(ctx context.Context, limit int) (more bool, err error) {
	var tasks []Claimed
	began := time.Now()
	w := NewBatch()
	err = r.d.Fence.Do(ctx, func(tx *fence.Tx) error {
		var err error
		if tasks, err = claim(ctx, tx, limit); err != nil || len(tasks) == 0 {
			return err
		}
		r.TakeLive(w, tasks)
		if err := LoadHistories(ctx, tx, tasks); err != nil {
			return err
		}
		return r.RunAndWrite(ctx, tx, &pgx.Batch{}, w, tasks)
	})
	if err == nil && len(tasks) > 0 {
		err = r.d.Crash.At(ctx, CrashCommitted)
	}
	r.d.Settle(ctx, w.Effects(), err)
	r.SettleLive(w, err)
	if len(tasks) > 0 && err == nil {
		metrics.WorkflowTaskSeconds.Observe(time.Since(began).Seconds())
	}
	return len(tasks) == limit, err
}

// RunAndWrite runs the claimed tasks (their histories loaded), adds their
// writes to w and sends w after whatever b holds already, with the
// transaction's COMMIT, in one round trip: it is the caller's last work in
// its transaction. New activity tasks take free activity slots
// (w.Direct): the caller settles w's effects once its transaction ends.
func (r *Runner) RunAndWrite(ctx context.Context, tx *fence.Tx, b *pgx.Batch, w *Batch, tasks []Claimed) error {
	if err := r.d.Crash.At(ctx, CrashLoaded); err != nil {
		return err
	}
	for _, t := range tasks {
		res, ran, err := r.runClaimed(ctx, tx, b, w, t)
		if err != nil {
			return err
		}
		if ran && res.Closed && t.Ex.IsChild {
			if err := r.d.Crash.At(ctx, CrashChildClose); err != nil {
				return err
			}
		}
	}
	if n := w.TaskCount(); n > 0 {
		w.Direct = r.d.Reserve(n)
	}
	if err := r.d.Crash.At(ctx, CrashRan); err != nil {
		return err
	}
	w.Ahead = tx.Ahead()
	w.Queue(b)
	if err := r.d.Crash.At(ctx, CrashBeforeCommit); err != nil {
		return err
	}
	if err := tx.CommitWith(ctx, b); err != nil {
		return fmt.Errorf("write: %w", store.Translate(err))
	}
	return nil
}

// Claimed is a locked execution with a due workflow task.
type Claimed struct {
	// Ex is the locked run; Attempt the task's attempt; DBNow the
	// transaction's workflow time; History the events loaded (or given)
	// for the task.
	Ex      *store.Exec
	Attempt int
	DBNow   time.Time
	History []harvest.Event
	// live is the run's cached state, taken out of the cache for the
	// task (TakeLive); nil: the history is read and replayed in full.
	live *liveRun
}

// runClaimed runs one claimed task and adds its writes to w (its
// commands) or b (its failure; the history is left untouched). ran is
// false when the run was closed already (the task is just cleared) or
// failed.
func (r *Runner) runClaimed(ctx context.Context, tx *fence.Tx, b *pgx.Batch, w *Batch, t Claimed) (harvest.TaskResult, bool, error) {
	if shardapi.IsTerminal(t.Ex.State) {
		w.ClearWorkflowTask(t.Ex)
		return harvest.TaskResult{}, false, nil
	}
	res, run, runErr, err := r.runLive(ctx, tx, t)
	if err != nil {
		return harvest.TaskResult{}, false, err
	}
	if runErr != nil {
		r.QueueFail(b, t.Ex, t.Attempt, runErr)
		return harvest.TaskResult{}, false, nil
	}
	pos := t.Ex.NextEventID
	err = w.ApplyTask(t.Ex, res, t.DBNow, r.d.Route)
	r.keepLive(w, t, run, pos, res.Closed || err != nil)
	return res, true, err
}

// RunTask runs the workflow code of a claimed task, for at most
// WorkflowTaskTimeout.
func (r *Runner) RunTask(ctx context.Context, t Claimed) (harvest.TaskResult, error) {
	taskCtx, cancel := context.WithTimeout(ctx, r.d.TaskTimeout)
	defer cancel()
	ex := t.Ex
	return r.d.Reg.RunWorkflowTask(taskCtx, harvest.WorkflowTask{
		Info:    harvest.WorkflowInfo{ExecutionID: ex.ID.String(), WorkflowName: ex.WorkflowName, WorkflowID: ex.WorkflowID},
		History: t.History,
	}, r.d.Log.With().Str("execution_id", ex.ID.String()).Logger())
}

// claim locks up to limit executions with due workflow tasks,
// most overdue first, with their attempts and the transaction's workflow
// time. A task is due on workflow time (a delayed start waits on it).
func claim(ctx context.Context, tx *fence.Tx, limit int) ([]Claimed, error) {
	rows, err := store.ClaimWorkflowTasks(ctx, tx, limit, tx.Ahead().Microseconds())
	if err != nil {
		return nil, fmt.Errorf("claim workflow tasks: %w", err)
	}
	tasks, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Claimed, error) {
		t := Claimed{Ex: &store.Exec{}}
		err := row.Scan(append(append([]any{&t.Ex.ID}, t.Ex.Targets()...), &t.Attempt, &t.DBNow, &t.Ex.IsChild)...)
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("claim workflow tasks: %w", err)
	}
	return tasks, nil
}

func wrapLoad(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("load histories: %w", err)
}

// QueueFail queues a task failure (non-determinism, panic,
// unknown workflow) on the execution: the task is retried with backoff;
// the history is left untouched.
func (r *Runner) QueueFail(b *pgx.Batch, ex *store.Exec, attempt int, runErr error) {
	attempt++
	delay := harvest.RetryPolicy{InitialInterval: r.d.Poll, MaxInterval: r.d.RetryMax}.Backoff(attempt)
	r.d.Log.Warn().Err(runErr).Str("execution_id", ex.ID.String()).Int("attempt", attempt).Msg("workflow task failed")
	store.QueueFailWorkflowTask(b, ex.ID, attempt, runErr.Error(), delay.Milliseconds())
}

// LoadHistory reads events with event_id >= from (limit < 0: all).
func LoadHistory(ctx context.Context, q store.Querier, ex *store.Exec, from int64, limit int) ([]harvest.Event, error) {
	events, err := store.LoadHistory(ctx, q, ex.ID, from, limit)
	if err != nil {
		return nil, fmt.Errorf("load history of %s: %w", ex.ID, err)
	}
	return events, nil
}

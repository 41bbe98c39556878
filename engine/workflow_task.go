package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/fence"
	"github.com/harvestd/harvest/engine/internal/loop"
	"github.com/harvestd/harvest/engine/internal/outbox"
	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/internal/metrics"
)

// workflowLoop runs due workflow tasks until ctx ends, up to
// WorkflowTaskBatch of them per transaction; after a failed transaction
// it takes one task at a time for a while, so that one task whose writes
// fail cannot hold others back.
func (e *Engine) workflowLoop(ctx context.Context) {
	solo := 0 // steps left that take one task
	e.drainLoop(ctx, e.wfWake, func(ctx context.Context) (bool, error) {
		limit := e.cfg.WorkflowTaskBatch
		if solo > 0 {
			limit, solo = 1, solo-1
		}
		found, err := e.runWorkflowTasks(ctx, limit)
		if err != nil && limit > 1 {
			solo = limit
		}
		return found, err
	})
}

// drainLoop runs step on wake as loop.Drain does, on the engine's poll
// tick and log.
func (e *Engine) drainLoop(ctx context.Context, wake chan struct{}, step func(context.Context) (bool, error)) {
	loop.Drain(ctx, wake, e.cfg.PollInterval, e.log, step)
}

// runWorkflowTasks claims up to limit due workflow tasks and runs them
// under their executions' row locks, in one fenced transaction: one read
// of their histories, one round trip for all their writes, one commit.
// more says it found a full batch: more tasks may be due.
func (e *Engine) runWorkflowTasks(ctx context.Context, limit int) (more bool, err error) {
	var tasks []claimedWorkflowTask
	began := time.Now()
	w := newTaskWrites()
	err = e.withTx(ctx, func(tx *fence.Tx) error {
		var err error
		if tasks, err = claimWorkflowTasks(ctx, tx, limit); err != nil || len(tasks) == 0 {
			return err
		}
		e.takeLive(w, tasks)
		if err := loadHistories(ctx, tx, tasks); err != nil {
			return err
		}
		return e.runAndWrite(ctx, tx, &pgx.Batch{}, w, tasks)
	})
	if err == nil && len(tasks) > 0 {
		err = e.crashAt(ctx, crashCommitted)
	}
	e.settle(ctx, w.Effects(), err)
	e.settleLive(w, err)
	if len(tasks) > 0 && err == nil {
		metrics.WorkflowTaskSeconds.Observe(time.Since(began).Seconds())
	}
	return len(tasks) == limit, err
}

// runAndWrite runs the claimed tasks (their histories loaded), adds their
// writes to w and sends w after whatever b holds already, with the
// transaction's COMMIT, in one round trip: it is the caller's last work in
// its transaction. New activity tasks take free activity slots
// (w.Direct): the caller settles w's effects once its transaction ends.
func (e *Engine) runAndWrite(ctx context.Context, tx *fence.Tx, b *pgx.Batch, w *taskWrites, tasks []claimedWorkflowTask) error {
	if err := e.crashAt(ctx, crashLoaded); err != nil {
		return err
	}
	for _, t := range tasks {
		res, ran, err := e.runClaimedTask(ctx, tx, b, w, t)
		if err != nil {
			return err
		}
		if ran && res.Closed && t.ex.IsChild {
			if err := e.crashAt(ctx, crashChildClose); err != nil {
				return err
			}
		}
	}
	if n := w.TaskCount(); n > 0 {
		w.Direct = e.reserveDispatch(n)
	}
	if err := e.crashAt(ctx, crashRan); err != nil {
		return err
	}
	w.Ahead = tx.Ahead()
	w.Queue(b)
	if err := e.crashAt(ctx, crashBeforeCommit); err != nil {
		return err
	}
	if err := tx.CommitWith(ctx, b); err != nil {
		return fmt.Errorf("write: %w", store.Translate(err))
	}
	return nil
}

// claimedWorkflowTask is a locked execution with a due workflow task.
type claimedWorkflowTask struct {
	ex      *store.Exec
	attempt int
	dbNow   time.Time
	history []harvest.Event
	// live is the run's cached state, taken out of the cache for the
	// task (takeLive); nil: the history is read and replayed in full.
	live *liveRun
}

// runClaimedTask runs one claimed task and adds its writes to w (its
// commands) or b (its failure; the history is left untouched). ran is
// false when the run was closed already (the task is just cleared) or
// failed.
func (e *Engine) runClaimedTask(ctx context.Context, tx *fence.Tx, b *pgx.Batch, w *taskWrites, t claimedWorkflowTask) (harvest.TaskResult, bool, error) {
	if IsTerminal(t.ex.State) {
		w.ClearWorkflowTask(t.ex)
		return harvest.TaskResult{}, false, nil
	}
	res, run, runErr, err := e.runLive(ctx, tx, t)
	if err != nil {
		return harvest.TaskResult{}, false, err
	}
	if runErr != nil {
		e.queueFailWorkflowTask(b, t.ex, t.attempt, runErr)
		return harvest.TaskResult{}, false, nil
	}
	pos := t.ex.NextEventID
	err = w.ApplyTask(t.ex, res, t.dbNow, outbox.Route)
	e.keepLive(w, t, run, pos, res.Closed || err != nil)
	return res, true, err
}

// runTask runs the workflow code of a claimed task, for at most
// WorkflowTaskTimeout.
func (e *Engine) runTask(ctx context.Context, t claimedWorkflowTask) (harvest.TaskResult, error) {
	taskCtx, cancel := context.WithTimeout(ctx, e.cfg.WorkflowTaskTimeout)
	defer cancel()
	ex := t.ex
	return e.reg.RunWorkflowTask(taskCtx, harvest.WorkflowTask{
		Info:    harvest.WorkflowInfo{ExecutionID: ex.ID.String(), WorkflowName: ex.WorkflowName, WorkflowID: ex.WorkflowID},
		History: t.history,
	}, e.log.With().Str("execution_id", ex.ID.String()).Logger())
}

// claimWorkflowTasks locks up to limit executions with due workflow tasks,
// most overdue first, with their attempts and the transaction's workflow
// time. A task is due on workflow time (a delayed start waits on it).
func claimWorkflowTasks(ctx context.Context, tx *fence.Tx, limit int) ([]claimedWorkflowTask, error) {
	rows, err := store.ClaimWorkflowTasks(ctx, tx, limit, micros(tx.Ahead()))
	if err != nil {
		return nil, fmt.Errorf("claim workflow tasks: %w", err)
	}
	tasks, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (claimedWorkflowTask, error) {
		t := claimedWorkflowTask{ex: &store.Exec{}}
		err := row.Scan(append(append([]any{&t.ex.ID}, t.ex.Targets()...), &t.attempt, &t.dbNow, &t.ex.IsChild)...)
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

// queueFailWorkflowTask queues a task failure (non-determinism, panic,
// unknown workflow) on the execution: the task is retried with backoff;
// the history is left untouched.
func (e *Engine) queueFailWorkflowTask(b *pgx.Batch, ex *store.Exec, attempt int, runErr error) {
	attempt++
	delay := harvest.RetryPolicy{InitialInterval: e.cfg.PollInterval, MaxInterval: e.cfg.TaskRetryMax}.Backoff(attempt)
	e.log.Warn().Err(runErr).Str("execution_id", ex.ID.String()).Int("attempt", attempt).Msg("workflow task failed")
	store.QueueFailWorkflowTask(b, ex.ID, attempt, runErr.Error(), delay.Milliseconds())
}

// loadHistory reads events with event_id >= from (limit < 0: all).
func loadHistory(ctx context.Context, q store.Querier, ex *store.Exec, from int64, limit int) ([]harvest.Event, error) {
	events, err := store.LoadHistory(ctx, q, ex.ID, from, limit)
	if err != nil {
		return nil, fmt.Errorf("load history of %s: %w", ex.ID, err)
	}
	return events, nil
}

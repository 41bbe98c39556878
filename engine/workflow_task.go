package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/internal/metrics"
)

// workflowLoop runs due workflow tasks until ctx ends.
func (e *Engine) workflowLoop(ctx context.Context) {
	e.drainLoop(ctx, e.wfWake, e.runWorkflowTask)
}

// drainLoop calls step while it finds work, then waits for a nudge or the
// poll tick. Found work nudges the channel again so idle peers join in.
func (e *Engine) drainLoop(ctx context.Context, wake chan struct{}, step func(context.Context) (bool, error)) {
	t := time.NewTicker(e.cfg.PollInterval)
	defer t.Stop()
	for {
		found, err := step(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			e.log.Warn().Err(err).Msg("shard loop step failed")
		}
		if found && err == nil {
			e.nudge(wake)
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-t.C:
		}
	}
}

// runWorkflowTask claims one due workflow task and runs it under the
// execution's row lock, in one fenced transaction.
func (e *Engine) runWorkflowTask(ctx context.Context) (bool, error) {
	found, closedRun, newWork := false, false, false
	var closedID uuid.UUID
	began := time.Now()
	err := e.withTx(ctx, func(tx pgx.Tx) error {
		ex, attempt, dbNow, err := claimWorkflowTask(ctx, tx)
		if err != nil || ex == nil {
			return err
		}
		found = true
		if IsTerminal(ex.State) {
			return clearWorkflowTask(ctx, tx, ex)
		}
		history, err := loadHistory(ctx, tx, ex, 0, -1)
		if err != nil {
			return err
		}
		taskCtx, cancel := context.WithTimeout(ctx, e.cfg.WorkflowTaskTimeout)
		defer cancel()
		res, runErr := e.reg.RunWorkflowTask(taskCtx, harvest.WorkflowTask{
			Info:    harvest.WorkflowInfo{ExecutionID: ex.ID.String(), WorkflowName: ex.WorkflowName, WorkflowID: ex.WorkflowID},
			History: history,
		}, e.log.With().Str("execution_id", ex.ID.String()).Logger())
		if runErr != nil {
			return e.failWorkflowTask(ctx, tx, ex, attempt, runErr)
		}
		newWork = len(res.Commands) > 0
		closedRun = res.Closed
		closedID = ex.ID
		return e.applyCommands(ctx, tx, ex, res, dbNow)
	})
	if found && err == nil {
		metrics.WorkflowTaskSeconds.Observe(time.Since(began).Seconds())
	}
	if closedRun {
		e.closed.fire(closedID)
	}
	if newWork {
		e.nudge(e.actWake)
		e.nudge(e.tmWake)
	}
	return found, err
}

// claimWorkflowTask locks the most overdue workflow task's execution and
// returns it with its attempt and the database clock.
func claimWorkflowTask(ctx context.Context, tx pgx.Tx) (*execRow, int, time.Time, error) {
	ex := &execRow{}
	var (
		attempt int
		now     time.Time
	)
	err := tx.QueryRow(ctx, `
		SELECT execution_id, workflow_name, workflow_id, state, next_event_id, created_at, wf_task_attempt, now()
		  FROM harvest_executions
		 WHERE wf_task_due_at <= now()
		 ORDER BY wf_task_due_at
		 LIMIT 1 FOR UPDATE SKIP LOCKED`).
		Scan(&ex.ID, &ex.WorkflowName, &ex.WorkflowID, &ex.State, &ex.NextEventID, &ex.CreatedAt, &attempt, &now)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, 0, time.Time{}, nil
	}
	if err != nil {
		return nil, 0, time.Time{}, fmt.Errorf("claim workflow task: %w", err)
	}
	return ex, attempt, now, nil
}

func clearWorkflowTask(ctx context.Context, tx pgx.Tx, ex *execRow) error {
	b := &pgx.Batch{}
	queueClearWorkflowTask(b, ex)
	return sendBatch(ctx, tx, b)
}

func queueClearWorkflowTask(b *pgx.Batch, ex *execRow) {
	b.Queue(`
		UPDATE harvest_executions SET wf_task_due_at = NULL, wf_task_attempt = 0, last_error = NULL
		 WHERE execution_id = $1`, ex.ID)
}

// failWorkflowTask records a task failure (non-determinism, panic, unknown
// workflow) on the execution and retries the task with backoff; the
// history is left untouched.
func (e *Engine) failWorkflowTask(ctx context.Context, tx pgx.Tx, ex *execRow, attempt int, runErr error) error {
	attempt++
	delay := harvest.RetryPolicy{InitialInterval: e.cfg.PollInterval, MaxInterval: e.cfg.TaskRetryMax}.Backoff(attempt)
	e.log.Warn().Err(runErr).Str("execution_id", ex.ID.String()).Int("attempt", attempt).Msg("workflow task failed")
	_, err := tx.Exec(ctx, `
		UPDATE harvest_executions
		   SET wf_task_attempt = $2, last_error = $3, updated_at = now(),
		       wf_task_due_at = now() + $4 * interval '1 millisecond'
		 WHERE execution_id = $1`, ex.ID, attempt, runErr.Error(), delay.Milliseconds())
	if err != nil {
		return fmt.Errorf("record workflow task failure of %s: %w", ex.ID, err)
	}
	return nil
}

// applyCommands appends the task's commands and creates what they imply
// (activity tasks, timers, the run's close), in one round trip.
func (e *Engine) applyCommands(ctx context.Context, tx pgx.Tx, ex *execRow, res harvest.TaskResult, dbNow time.Time) error {
	b := &pgx.Batch{}
	cmds := make([]harvest.Command, len(res.Commands))
	copy(cmds, res.Commands)
	for i, c := range cmds {
		filled, err := queueCommand(b, ex, c, dbNow)
		if err != nil {
			return err
		}
		cmds[i] = filled
	}
	queueAppendEvents(b, ex, cmds, false)
	if res.Closed {
		if err := queueCloseFromCommand(b, ex, cmds[len(cmds)-1]); err != nil {
			return err
		}
	} else {
		queueClearWorkflowTask(b, ex)
	}
	return sendBatch(ctx, tx, b)
}

// queueCommand queues the row a command creates (activity task, timer)
// and returns the command as recorded (a timer gets its fire time).
func queueCommand(b *pgx.Batch, ex *execRow, c harvest.Command, now time.Time) (harvest.Command, error) {
	switch c.Type {
	case harvest.EventActivityScheduled:
		var d harvest.ActivityScheduledData
		if err := json.Unmarshal(c.Data, &d); err != nil {
			return c, fmt.Errorf("decode ActivityScheduled: %w", err)
		}
		return c, queueActivityTask(b, ex, d)
	case harvest.EventTimerStarted:
		var d harvest.TimerStartedData
		if err := json.Unmarshal(c.Data, &d); err != nil {
			return c, fmt.Errorf("decode TimerStarted: %w", err)
		}
		fireAt := now.Add(time.Duration(d.DurationMS) * time.Millisecond)
		d.FireAt = &fireAt
		b.Queue(`INSERT INTO harvest_timers (execution_id, timer_id, fire_at) VALUES ($1, $2, $3)`, ex.ID, d.TimerID, fireAt)
		return harvest.NewCommand(c.Type, d), nil
	}
	return c, nil
}

func queueActivityTask(b *pgx.Batch, ex *execRow, d harvest.ActivityScheduledData) error {
	opts, err := json.Marshal(d.Options)
	if err != nil {
		return fmt.Errorf("encode activity options: %w", err)
	}
	var closeMS *int64
	if d.Options.ScheduleToClose > 0 {
		ms := d.Options.ScheduleToClose.Milliseconds()
		closeMS = &ms
	}
	b.Queue(`
		INSERT INTO harvest_tasks (execution_id, activity_id, activity_name, queue, input, idempotency_key, options, close_deadline)
		VALUES ($1, $2, $3, $4, $5, $6, $7, now() + $8 * interval '1 millisecond')`,
		ex.ID, d.ActivityID, d.Name, d.Queue, nullJSON(inputOrNull(d.Input)), d.IdempotencyKey, string(opts), closeMS)
	return nil
}

func queueCloseFromCommand(b *pgx.Batch, ex *execRow, last harvest.Command) error {
	switch last.Type {
	case harvest.EventWorkflowCompleted:
		var d harvest.WorkflowCompletedData
		if err := json.Unmarshal(last.Data, &d); err != nil {
			return fmt.Errorf("decode WorkflowCompleted: %w", err)
		}
		queueCloseExecution(b, ex, StateCompleted, inputOrNull(d.Output), nil)
		return nil
	case harvest.EventWorkflowFailed:
		var d harvest.WorkflowFailedData
		if err := json.Unmarshal(last.Data, &d); err != nil {
			return fmt.Errorf("decode WorkflowFailed: %w", err)
		}
		info, err := json.Marshal(d.Error)
		if err != nil {
			return fmt.Errorf("encode workflow error: %w", err)
		}
		queueCloseExecution(b, ex, StateFailed, nil, info)
		return nil
	}
	return fmt.Errorf("close run %s: unexpected last command %s", ex.ID, last.Type)
}

// loadHistory reads events with event_id >= from (limit < 0: all).
func loadHistory(ctx context.Context, q interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}, ex *execRow, from int64, limit int) ([]harvest.Event, error) {
	rows, err := q.Query(ctx, `
		SELECT event_id, event_type, data, created_at FROM harvest_events
		 WHERE execution_id = $1 AND event_id >= $2
		 ORDER BY event_id
		 LIMIT CASE WHEN $3 < 0 THEN NULL ELSE $3 END`, ex.ID, from, limit)
	if err != nil {
		return nil, fmt.Errorf("load history of %s: %w", ex.ID, err)
	}
	events, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (harvest.Event, error) {
		var ev harvest.Event
		var t string
		err := row.Scan(&ev.EventID, &t, &ev.Data, &ev.Timestamp)
		ev.Type = harvest.EventType(t)
		return ev, err
	})
	if err != nil {
		return nil, fmt.Errorf("load history of %s: %w", ex.ID, err)
	}
	return events, nil
}

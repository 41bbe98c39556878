package engine

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
)

// eventXmins lists the transaction ids that wrote the run's events, in
// event order.
func eventXmins(t *testing.T, pool *pgxpool.Pool, id uuid.UUID) []string {
	t.Helper()
	rows, err := pool.Query(ctxT(t), `SELECT xmin::text FROM harvest_events WHERE execution_id = $1 ORDER BY event_id`, id)
	require.NoError(t, err)
	defer rows.Close()
	var xmins []string
	for rows.Next() {
		var x string
		require.NoError(t, rows.Scan(&x))
		xmins = append(xmins, x)
	}
	require.NoError(t, rows.Err())
	return xmins
}

// runRow is what the tests read of a run's row.
type runRow struct {
	xmin, claimXmin, state string
	next                   int64
	due, completed         bool
	attempt                int
	lastError              string
}

func readRun(t *testing.T, pool *pgxpool.Pool, id uuid.UUID) runRow {
	t.Helper()
	var r runRow
	require.NoError(t, pool.QueryRow(ctxT(t), `
		SELECT x.xmin::text, coalesce((SELECT c.xmin::text FROM harvest_start_idempotency c WHERE c.execution_id = x.execution_id), ''),
		       x.state, x.next_event_id, x.wf_task_due_at IS NOT NULL, x.completed_at IS NOT NULL,
		       x.wf_task_attempt, coalesce(x.last_error, '')
		  FROM harvest_executions x WHERE x.execution_id = $1`, id).
		Scan(&r.xmin, &r.claimXmin, &r.state, &r.next, &r.due, &r.completed, &r.attempt, &r.lastError))
	return r
}

// A start batch runs each new run's first workflow task before inserting
// the run (eager start): the run, its claim and the task's events are
// written by one transaction.
func TestFirstWorkflowTasks(t *testing.T) {
	t.Parallel()

	t.Run("RunClosedByItsFirstTaskIsInsertedClosed", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := b.engine(t)
		res := start(t, e, StartRequest{WorkflowName: "noop", IdempotencyKey: "first", Input: raw(t, "hi")})
		require.True(t, res.StartedFresh)
		require.Equal(t, StateCompleted, res.State, "the start answers with the state its first task left")

		r := readRun(t, b.pool, res.ExecutionID)
		require.Equal(t, r.xmin, r.claimXmin, "the run was inserted by the claim's transaction")
		require.Equal(t, StateCompleted, r.state)
		require.EqualValues(t, 2, r.next)
		require.False(t, r.due, "no workflow task is left")
		require.True(t, r.completed)
		require.Equal(t, []string{"WorkflowStarted", "WorkflowCompleted"}, eventTypes(t, b.pool, res.ExecutionID))
		require.Equal(t, []string{r.xmin, r.xmin}, eventXmins(t, b.pool, res.ExecutionID))

		x := waitClosed(t, e, res.ExecutionID)
		require.JSONEq(t, `"hi"`, string(x.Output))

		again := start(t, e, StartRequest{WorkflowName: "noop", IdempotencyKey: "first", Input: raw(t, "hi")})
		require.True(t, again.Deduplicated)
		require.Equal(t, res.ExecutionID, again.ExecutionID)
		require.Len(t, eventTypes(t, b.pool, res.ExecutionID), 2, "a replay appends nothing")
	})

	t.Run("TheRowsOfARunItsFirstTaskClosesAreCleared", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		rec := harvest.NewActivity("left_behind", func(ctx *harvest.ActivityContext, _ string) (string, error) {
			return "", nil
		})
		require.NoError(t, b.reg.Register(rec, harvest.NewWorkflow("hasty", func(ctx harvest.Context, in string) (string, error) {
			rec.Execute(ctx, in) // never waited for
			_ = harvest.NewTimer(ctx, time.Hour)
			return in, nil
		})))
		e := b.engine(t)
		res := start(t, e, StartRequest{WorkflowName: "hasty", IdempotencyKey: "h", Input: raw(t, "x")})
		require.Equal(t, StateCompleted, res.State)
		require.Equal(t, []string{"WorkflowStarted", "ActivityScheduled", "TimerStarted", "WorkflowCompleted"},
			eventTypes(t, b.pool, res.ExecutionID))
		require.Zero(t, countRows(t, b, `SELECT count(*) FROM harvest_tasks WHERE execution_id = $1`, res.ExecutionID),
			"the close drops the activity task the same batch wrote")
		require.Zero(t, countRows(t, b, `SELECT count(*) FROM harvest_timers WHERE execution_id = $1`, res.ExecutionID),
			"and the timer")
	})

	t.Run("FirstActivityIsScheduledByTheStart", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := b.engine(t)
		res := start(t, e, StartRequest{WorkflowName: "two_calls", IdempotencyKey: "first-activity"})
		require.Equal(t, StateRunning, res.State)
		x := waitClosed(t, e, res.ExecutionID)
		require.Equal(t, StateCompleted, x.State)
		xmins := eventXmins(t, b.pool, res.ExecutionID)
		require.Equal(t, []string{"WorkflowStarted", "ActivityScheduled", "ActivityCompleted", "ActivityScheduled",
			"ActivityCompleted", "WorkflowCompleted"}, eventTypes(t, b.pool, res.ExecutionID))
		require.Equal(t, xmins[0], xmins[1], "the first ActivityScheduled was written with WorkflowStarted")
		require.Equal(t, xmins[0], readRun(t, b.pool, res.ExecutionID).claimXmin)
	})

	t.Run("FailedFirstTaskIsRecordedAndRetried", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		var failing atomic.Bool
		failing.Store(true)
		require.NoError(t, b.reg.Register(harvest.NewWorkflow("fails_first", func(ctx harvest.Context, in string) (string, error) {
			if failing.Load() {
				panic("not yet")
			}
			return in, nil
		})))
		// The failure's backoff starts at the poll interval: long enough
		// that the workflow loop cannot retry before the row is read.
		e := b.engine(t, func(c *Config) { c.PollInterval = 3 * time.Second })
		res := start(t, e, StartRequest{WorkflowName: "fails_first", IdempotencyKey: "fails", Input: raw(t, "x")})
		require.Equal(t, StateRunning, res.State)
		r := readRun(t, b.pool, res.ExecutionID)
		require.Equal(t, r.xmin, r.claimXmin, "the failure was recorded in the start's transaction")
		require.EqualValues(t, 1, r.next)
		require.True(t, r.due, "the task is left to the workflow loop")
		require.Equal(t, 1, r.attempt)
		require.Contains(t, r.lastError, "not yet")
		require.Equal(t, []string{"WorkflowStarted"}, eventTypes(t, b.pool, res.ExecutionID))

		failing.Store(false)
		x := waitClosed(t, e, res.ExecutionID)
		require.Equal(t, StateCompleted, x.State)
		require.Equal(t, []string{"WorkflowStarted", "WorkflowCompleted"}, eventTypes(t, b.pool, res.ExecutionID))
	})

	t.Run("SlowFirstTaskIsLeftToTheLoopUntried", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		stuck, proceed := make(chan struct{}), make(chan struct{})
		t.Cleanup(func() { close(stuck) })
		var calls atomic.Int32
		require.NoError(t, b.reg.Register(harvest.NewWorkflow("slow_first", func(ctx harvest.Context, in string) (string, error) {
			if calls.Add(1) == 1 {
				<-stuck // the start's run never yields within the batch's budget
			} else {
				<-proceed // the workflow loop's run waits until the row is read
			}
			return in, nil
		})))
		// The task timeout is below the lease: without the start batch's
		// own budget the first task would be cut by it and recorded as a
		// failed attempt.
		e := b.engine(t, func(c *Config) { c.LeaseTTL, c.WorkflowTaskTimeout = 30*time.Second, 5*time.Second })
		res := start(t, e, StartRequest{WorkflowName: "slow_first", IdempotencyKey: "slow", Input: raw(t, "x")})
		require.Equal(t, StateRunning, res.State)
		r := readRun(t, b.pool, res.ExecutionID)
		require.Zero(t, r.attempt, "a task cut short by the budget is not a failure")
		require.Empty(t, r.lastError)
		require.True(t, r.due)
		close(proceed)
		require.Equal(t, StateCompleted, waitClosed(t, e, res.ExecutionID).State, "the workflow loop ran it")
		require.Equal(t, []string{"WorkflowStarted", "WorkflowCompleted"}, eventTypes(t, b.pool, res.ExecutionID))
	})

	t.Run("DelayedStartIsLeftToTheWorkflowLoop", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := b.engine(t)
		delay := time.Hour
		res := start(t, e, StartRequest{WorkflowName: "noop", IdempotencyKey: "later", Delay: &delay})
		require.Equal(t, StateRunning, res.State)
		r := readRun(t, b.pool, res.ExecutionID)
		require.True(t, r.due)
		require.EqualValues(t, 1, r.next)
		require.Zero(t, r.attempt)
		require.Equal(t, []string{"WorkflowStarted"}, eventTypes(t, b.pool, res.ExecutionID))
	})
}

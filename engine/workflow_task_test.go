package engine

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
)

// Workflow tasks and activity completions that are due together share
// transactions, and each run still gets its exact history.
func TestWorkflowTaskBatches(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.reg.Register(harvest.NewWorkflow("panics", func(harvest.Context, string) (string, error) {
		panic("boom")
	})))
	// One worker taking up to 8 tasks per transaction; the runs are made
	// due at the same moment, so that batches hold several of them.
	e := b.engine(t, func(c *Config) { c.WorkflowWorkers, c.WorkflowTaskBatch = 1, 8 })
	due := time.Now().Add(3 * time.Second) // after the 21 starts, even on a loaded machine
	var runs []uuid.UUID
	for i := range 20 {
		res := start(t, e, StartRequest{WorkflowName: "two_calls", IdempotencyKey: fmt.Sprint("batch-", i), StartAt: &due})
		runs = append(runs, res.ExecutionID)
	}
	bad := start(t, e, StartRequest{WorkflowName: "panics", StartAt: &due})

	for _, id := range runs {
		x := waitClosed(t, e, id)
		require.Equal(t, StateCompleted, x.State, "run %s", id)
		require.Equal(t, []string{"WorkflowStarted", "ActivityScheduled", "ActivityCompleted", "ActivityScheduled",
			"ActivityCompleted", "WorkflowCompleted"}, eventTypes(t, b.pool, id), "run %s: exact history", id)
	}
	var sharing int
	require.NoError(t, b.pool.QueryRow(ctxT(t), `
		SELECT count(*) - count(DISTINCT xmin::text) FROM harvest_executions WHERE workflow_name = 'two_calls'`).Scan(&sharing))
	require.Positive(t, sharing, "some runs were closed by the same transaction")
	require.NoError(t, b.pool.QueryRow(ctxT(t), `
		SELECT count(*) - count(DISTINCT xmin::text) FROM harvest_events WHERE event_type = 'ActivityCompleted'`).Scan(&sharing))
	require.Positive(t, sharing, "some activity completions were recorded by the same transaction")

	eventually(t, "the panicking task recorded as failed, not blocking the batch", func() bool {
		d, err := e.Describe(ctxT(t), bad.ExecutionID)
		return err == nil && d.Execution.LastError != ""
	})
	d, err := e.Describe(ctxT(t), bad.ExecutionID)
	require.NoError(t, err)
	require.Equal(t, StateRunning, d.Execution.State)
	require.Equal(t, []string{"WorkflowStarted"}, eventTypes(t, b.pool, bad.ExecutionID), "a failed task appends nothing")
}

func TestConfigRejectsNegativeWorkflowTaskBatch(t *testing.T) {
	t.Parallel()
	cfg := Config{ShardID: 1, NodeID: "n", WorkflowTaskBatch: -1}
	require.ErrorContains(t, cfg.withDefaults().Validate(), "workflow task batch")
}

// A completed activity's workflow task runs in the completion's own
// transaction (eager workflow tasks): the ActivityCompleted event and the
// commands it leads to share xmin, and the run's history is exact.
func TestEagerWorkflowTasks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e := b.engine(t)
	res := start(t, e, StartRequest{WorkflowName: "two_calls", IdempotencyKey: "eager"})
	x := waitClosed(t, e, res.ExecutionID)
	require.Equal(t, StateCompleted, x.State)
	require.Equal(t, []string{"WorkflowStarted", "ActivityScheduled", "ActivityCompleted", "ActivityScheduled",
		"ActivityCompleted", "WorkflowCompleted"}, eventTypes(t, b.pool, res.ExecutionID))
	rows, err := b.pool.Query(ctxT(t), `
		SELECT xmin::text FROM harvest_events WHERE execution_id = $1 ORDER BY event_id`, res.ExecutionID)
	require.NoError(t, err)
	var xmins []string
	for rows.Next() {
		var xmin string
		require.NoError(t, rows.Scan(&xmin))
		xmins = append(xmins, xmin)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, xmins[2], xmins[3], "the second ActivityScheduled was written with the first ActivityCompleted")
	require.Equal(t, xmins[4], xmins[5], "WorkflowCompleted was written with the second ActivityCompleted")
	require.NotEqual(t, xmins[1], xmins[2], "an activity completes after its scheduling committed")
}

// An eager task that fails leaves the completion recorded and the run's
// event counter right; the workflow loop retries the task later.
func TestEagerWorkflowTaskFailure(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var failing atomic.Bool
	failing.Store(true)
	rec := harvest.NewActivity("rec_then", func(ctx *harvest.ActivityContext, in string) (string, error) { return in, nil })
	require.NoError(t, b.reg.Register(rec, harvest.NewWorkflow("fails_after_activity", func(ctx harvest.Context, in string) (string, error) {
		out, err := rec.Execute(ctx, in).Get(ctx)
		if err == nil && failing.Load() {
			panic("not yet")
		}
		return out, err
	})))
	e := b.engine(t)
	res := start(t, e, StartRequest{WorkflowName: "fails_after_activity", IdempotencyKey: "eager-fail", Input: raw(t, "x")})
	eventually(t, "the task after the completion failed", func() bool {
		d, err := e.Describe(ctxT(t), res.ExecutionID)
		return err == nil && d.Execution.LastError != ""
	})
	require.Equal(t, []string{"WorkflowStarted", "ActivityScheduled", "ActivityCompleted"}, eventTypes(t, b.pool, res.ExecutionID))
	var next int64
	require.NoError(t, b.pool.QueryRow(ctxT(t), `SELECT next_event_id FROM harvest_executions WHERE execution_id = $1`,
		res.ExecutionID).Scan(&next))
	require.EqualValues(t, 3, next, "the completion advanced the run's event counter")

	failing.Store(false)
	x := waitClosed(t, e, res.ExecutionID)
	require.Equal(t, StateCompleted, x.State)
	require.Equal(t, []string{"WorkflowStarted", "ActivityScheduled", "ActivityCompleted", "WorkflowCompleted"},
		eventTypes(t, b.pool, res.ExecutionID))
}

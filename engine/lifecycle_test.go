package engine

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/demo"
)

func TestResumeOnNewEngine(t *testing.T) {
	t.Parallel()

	t.Run("WaitingOnSignal", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e1 := b.engine(t)
		run := start(t, e1, StartRequest{WorkflowName: demo.OrderName, Input: raw(t, demo.OrderInput{OrderID: "o", SleepMS: 50})})
		eventually(t, "the approval wait", func() bool { return len(eventTypes(t, b.pool, run.ExecutionID)) == 4 })
		e1.Stop()

		e2 := b.engine(t)
		_, err := e2.Signal(context.Background(), SignalRequest{ExecutionID: run.ExecutionID, SignalName: demo.ApprovedSignal, Payload: raw(t, demo.Approval{By: "ann"})})
		require.NoError(t, err)
		x := waitClosed(t, e2, run.ExecutionID)
		require.Equal(t, StateCompleted, x.State)
		require.JSONEq(t, `{"charge_id":"ch_1","status":"approved","approver":"ann"}`, string(x.Output))
		require.Equal(t, []string{"WorkflowStarted", "ActivityScheduled", "ActivityCompleted", "TimerStarted",
			"SignalReceived", "TimerStarted", "TimerFired", "WorkflowCompleted"}, eventTypes(t, b.pool, run.ExecutionID))
		require.Equal(t, 1, b.demo.Services.Payments.TotalCalls())
	})

	t.Run("DurableSleepSurvivesCrash", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e1 := b.engine(t)
		run := start(t, e1, StartRequest{WorkflowName: demo.OrderName, Input: raw(t, demo.OrderInput{OrderID: "o", SleepMS: 300})})
		eventually(t, "the approval wait", func() bool { return len(eventTypes(t, b.pool, run.ExecutionID)) == 4 })
		_, err := e1.Signal(context.Background(), SignalRequest{ExecutionID: run.ExecutionID, SignalName: demo.ApprovedSignal, Payload: raw(t, demo.Approval{By: "bo"})})
		require.NoError(t, err)
		eventually(t, "the sleep", func() bool { return len(eventTypes(t, b.pool, run.ExecutionID)) == 6 })
		crash(e1)

		e2 := b.engine(t)
		x := waitClosed(t, e2, run.ExecutionID)
		require.Equal(t, StateCompleted, x.State)
		types := eventTypes(t, b.pool, run.ExecutionID)
		require.Equal(t, 1, count(types, harvest.EventTimerFired))
		require.Equal(t, 1, count(types, harvest.EventWorkflowCompleted))
	})

	t.Run("ApprovalTimeout", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := b.engine(t)
		run := start(t, e, StartRequest{WorkflowName: demo.OrderName, Input: raw(t, demo.OrderInput{OrderID: "o", ApprovalTimeoutMS: 100})})
		x := waitClosed(t, e, run.ExecutionID)
		require.JSONEq(t, `{"charge_id":"ch_1","status":"approval_timeout"}`, string(x.Output))
	})
}

// TestNonDeterminismIsVisible runs with the state cache on and off, and
// on one engine after a forced eviction: a changed code fails its task
// whenever the run's state is rebuilt by replay.
func TestNonDeterminismIsVisible(t *testing.T) {
	t.Parallel()
	record := harvest.NewActivity("step", func(*harvest.ActivityContext, string) (string, error) { return "ok", nil })
	for _, tc := range []struct {
		name  string
		cache func(*Config)
	}{
		{"CacheOn", func(*Config) {}},
		{"CacheOff", func(c *Config) { c.StateCacheEntries = -1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			v1 := harvest.NewWorkflow("evolving", func(ctx harvest.Context, _ string) (string, error) {
				if _, err := record.Execute(ctx, "").Get(ctx); err != nil {
					return "", err
				}
				return goSignal.Receive(ctx)
			})
			require.NoError(t, b.reg.Register(record, v1))
			e1 := b.engine(t, tc.cache)
			run := start(t, e1, StartRequest{WorkflowName: "evolving"})
			eventually(t, "the activity", func() bool { return len(eventTypes(t, b.pool, run.ExecutionID)) == 3 })
			e1.Stop()

			// The next deployment changed the code: a timer where an activity was.
			b.reg = harvest.NewRegistry()
			require.NoError(t, b.reg.Register(record, harvest.NewWorkflow("evolving", func(ctx harvest.Context, _ string) (string, error) {
				if err := harvest.Sleep(ctx, time.Second); err != nil {
					return "", err
				}
				return goSignal.Receive(ctx)
			})))
			e2 := b.engine(t, tc.cache)
			requireNonDeterminism(t, b, e2, run.ExecutionID)
		})
	}

	t.Run("AfterForcedEviction", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		var deployed atomic.Int32 // the code version the one engine runs
		require.NoError(t, b.reg.Register(record, harvest.NewWorkflow("evolving", func(ctx harvest.Context, _ string) (string, error) {
			if deployed.Load() == 0 {
				if _, err := record.Execute(ctx, "").Get(ctx); err != nil {
					return "", err
				}
			} else if err := harvest.Sleep(ctx, time.Second); err != nil {
				return "", err
			}
			return goSignal.Receive(ctx)
		})))
		e := b.engine(t)
		run := start(t, e, StartRequest{WorkflowName: "evolving"})
		eventually(t, "the run cached past its activity", func() bool {
			next, ok := e.wf.CachedNext(run.ExecutionID)
			return ok && next == 3
		})
		deployed.Store(1)
		e.wf.Purge()
		requireNonDeterminism(t, b, e, run.ExecutionID)
	})
}

// requireNonDeterminism signals the run, whose code changed, and requires
// its task to fail with non-determinism, the history untouched.
func requireNonDeterminism(t *testing.T, b *testBundle, e *Engine, id uuid.UUID) {
	t.Helper()
	_, err := e.Signal(context.Background(), SignalRequest{ExecutionID: id, SignalName: "go", Payload: raw(t, "x")})
	require.NoError(t, err)
	before := eventTypes(t, b.pool, id)
	eventually(t, "the task failure", func() bool {
		d, err := e.Describe(context.Background(), id)
		require.NoError(t, err)
		return d.Execution.LastError != ""
	})
	d, err := e.Describe(context.Background(), id)
	require.NoError(t, err)
	require.Contains(t, d.Execution.LastError, "non-determinism")
	require.Equal(t, StateRunning, d.Execution.State)
	require.Equal(t, before, eventTypes(t, b.pool, id), "history untouched")
	require.Equal(t, []string{"WorkflowStarted", "ActivityScheduled", "ActivityCompleted", "SignalReceived"}, before)
}

func TestFencing(t *testing.T) {
	t.Parallel()

	t.Run("StaleOwnerCommitsNothing", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		a := b.engine(t)
		run := start(t, a, StartRequest{WorkflowName: "collect"})
		other := b.engine(t, func(c *Config) { c.NodeID = "node-b"; c.TakeOver = func(string) bool { return true } })
		require.Greater(t, other.Epoch(), a.Epoch())

		var runs, events int
		countAll := func() {
			require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT count(*) FROM harvest_executions`).Scan(&runs))
			require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT count(*) FROM harvest_events`).Scan(&events))
		}
		countAll()
		runsBefore, eventsBefore := runs, events
		_, err := a.StartWorkflow(context.Background(), StartRequest{WorkflowName: "collect"})
		require.Error(t, err)
		_, err = a.Signal(context.Background(), SignalRequest{ExecutionID: run.ExecutionID, SignalName: "item", Payload: raw(t, "x")})
		require.Error(t, err)
		countAll()
		require.Equal(t, runsBefore, runs)
		require.Equal(t, eventsBefore, events)
		require.False(t, a.Owning(), "losing the lease stops the old owner")

		r, err := other.Signal(context.Background(), SignalRequest{ExecutionID: run.ExecutionID, SignalName: "item", Payload: raw(t, "stop")})
		require.NoError(t, err)
		require.True(t, r.Delivered)
		require.Equal(t, StateCompleted, waitClosed(t, other, run.ExecutionID).State)
	})

	t.Run("InFlightActivityOfStaleOwnerIsRefused", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		pay := b.demo.Services.Payments
		release := make(chan struct{})
		started := make(chan struct{}, 1)
		pay.AfterEffect = func(ctx context.Context, key string) error {
			if pay.Calls(key) == 1 {
				started <- struct{}{}
				<-release // still "running" on the old owner while the lease moves
			}
			return nil
		}
		a := b.engine(t)
		run := start(t, a, StartRequest{WorkflowName: demo.OrderName, Input: raw(t, demo.OrderInput{OrderID: "f"})})
		<-started
		other := b.engine(t, func(c *Config) { c.NodeID = "node-b"; c.TakeOver = func(string) bool { return true } })
		eventually(t, "the new owner to re-run the charge", func() bool { return pay.TotalCalls() == 2 })
		close(release) // the old attempt returns; its completion must be refused
		eventually(t, "the approval wait", func() bool { return len(eventTypes(t, b.pool, run.ExecutionID)) == 4 })
		require.Equal(t, 1, count(eventTypes(t, b.pool, run.ExecutionID), harvest.EventActivityCompleted))
		require.Equal(t, 1, pay.Effects())
		_, err := other.Cancel(context.Background(), run.ExecutionID, "done")
		require.NoError(t, err)
	})

	t.Run("LeaseHeldByLiveNode", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.engine(t)
		e, err := New(b.pool, b.reg, testConfig("node-c"))
		require.NoError(t, err)
		require.ErrorIs(t, e.Start(context.Background()), ErrLeaseHeld)
	})

	t.Run("GracefulStopReleasesLease", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		a := b.engine(t)
		a.Stop()
		c := b.engine(t, func(c *Config) { c.NodeID = "node-c" })
		require.True(t, c.Owning())
	})

	t.Run("ShardMismatch", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		a := b.engine(t)
		a.Stop()
		e, err := New(b.pool, b.reg, func() Config { c := testConfig("node-a"); c.ShardID = 9; return c }())
		require.NoError(t, err)
		require.ErrorIs(t, e.Start(context.Background()), ErrShardMismatch)
	})
}

func TestQueries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e := b.engine(t)
	run := start(t, e, StartRequest{WorkflowName: "collect", WorkflowID: "q1"})
	for _, v := range []string{"a", "b", "c", "stop"} {
		_, err := e.Signal(context.Background(), SignalRequest{ExecutionID: run.ExecutionID, SignalName: "item", Payload: raw(t, v)})
		require.NoError(t, err)
	}
	waitClosed(t, e, run.ExecutionID)
	for range 3 {
		start(t, e, StartRequest{WorkflowName: "block"})
	}

	t.Run("HistoryPages", func(t *testing.T) {
		p1, err := e.History(context.Background(), run.ExecutionID, HistoryQuery{After: -1, Limit: 2})
		require.NoError(t, err)
		require.Len(t, p1.Events, 2)
		require.Equal(t, int64(0), p1.Events[0].EventID)
		require.NotNil(t, p1.NextCursor)
		p2, err := e.History(context.Background(), run.ExecutionID, HistoryQuery{After: *p1.NextCursor, Limit: 100})
		require.NoError(t, err)
		require.Nil(t, p2.NextCursor)
		require.Equal(t, p1.TotalEvents, int64(len(p1.Events)+len(p2.Events)))
		sig, err := e.History(context.Background(), run.ExecutionID, HistoryQuery{After: -1, Types: []string{"SignalReceived"}})
		require.NoError(t, err)
		require.Len(t, sig.Events, 4)
	})

	t.Run("ListFiltersAndPages", func(t *testing.T) {
		all, err := e.List(context.Background(), ListQuery{PageSize: 2})
		require.NoError(t, err)
		require.Len(t, all.Workflows, 2)
		require.NotEmpty(t, all.NextCursor)
		rest, err := e.List(context.Background(), ListQuery{PageSize: 10, Cursor: all.NextCursor})
		require.NoError(t, err)
		require.Len(t, rest.Workflows, 2)
		require.Empty(t, rest.NextCursor)
		done, err := e.List(context.Background(), ListQuery{States: []string{StateCompleted}})
		require.NoError(t, err)
		require.Len(t, done.Workflows, 1)
		require.Equal(t, "q1", done.Workflows[0].WorkflowID)
		_, err = e.List(context.Background(), ListQuery{Cursor: "garbage!"})
		require.ErrorIs(t, err, ErrInvalidArgument)
	})

	t.Run("DescribeAndResult", func(t *testing.T) {
		d, err := e.Describe(context.Background(), run.ExecutionID)
		require.NoError(t, err)
		require.Equal(t, StateCompleted, d.Execution.State)
		require.JSONEq(t, `["a","b","c"]`, string(d.Execution.Output))
		require.Len(t, d.History, int(d.Execution.EventCount))
		_, err = e.Describe(context.Background(), NewExecutionID(7))
		require.ErrorIs(t, err, ErrNotFound)
		running := start(t, e, StartRequest{WorkflowName: "block"})
		x, err := e.Result(context.Background(), running.ExecutionID, 30*time.Millisecond)
		require.NoError(t, err)
		require.Equal(t, StateRunning, x.State, "the wait elapses on a running run")
	})
}

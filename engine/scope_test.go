package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
)

// scopeBundle is setup plus the cancel-scope workflows and what their
// activity saw.
type scopeBundle struct {
	*testBundle
	started chan struct{} // the heartbeating activity runs
	saw     chan error    // what its heartbeat returned once cancelled
}

func setupScopes(t *testing.T) (*Engine, *scopeBundle) {
	t.Helper()
	b := &scopeBundle{testBundle: setup(t), started: make(chan struct{}, 1), saw: make(chan error, 1)}
	beat := harvest.NewActivity("beat_until_cancelled", func(ctx *harvest.ActivityContext, _ string) (string, error) {
		b.started <- struct{}{}
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			if err := ctx.Heartbeat(nil); err != nil {
				<-ctx.Done() // the attempt's context is cancelled too
				b.saw <- err
				return "", err
			}
			<-tick.C
		}
	})
	record := harvest.NewActivity("after_cancel", func(*harvest.ActivityContext, string) (string, error) { return "ok", nil })
	require.NoError(t, b.reg.Register(beat, record,
		harvest.NewWorkflow("scope_timer", func(ctx harvest.Context, _ string) (string, error) {
			cctx, cancel := harvest.WithCancel(ctx)
			timer := harvest.NewTimer(cctx, time.Second)
			if _, err := goSignal.Receive(ctx); err != nil {
				return "", err
			}
			cancel()
			if _, err := timer.Get(ctx); !errors.Is(err, harvest.ErrCanceled) {
				return "", errors.New("the timer was not cancelled")
			}
			// Outlive the cancelled timer's fire time: it must not fire.
			if err := harvest.Sleep(ctx, 1500*time.Millisecond); err != nil {
				return "", err
			}
			return record.Execute(ctx, "").Get(ctx)
		}),
		harvest.NewWorkflow("scope_activity", func(ctx harvest.Context, _ string) (string, error) {
			cctx, cancel := harvest.WithCancel(ctx)
			f := beat.Execute(cctx, "", harvest.ActivityOptions{HeartbeatTimeout: 10 * time.Second})
			if _, err := goSignal.Receive(ctx); err != nil {
				return "", err
			}
			cancel()
			_, err := f.Get(ctx)
			var ce *harvest.CanceledError
			if !errors.As(err, &ce) {
				return "", errors.New("the activity's future did not fail with a CanceledError")
			}
			return goSignal.Receive(ctx) // closes once the test saw the attempt stop
		}),
		harvest.NewWorkflow("scope_select", func(ctx harvest.Context, _ string) (string, error) {
			cctx, cancel := harvest.WithCancel(ctx)
			won := ""
			harvest.NewSelector(ctx).
				AddReceive(goSignal, func() { won, _ = goSignal.Receive(ctx) }).
				AddFuture(harvest.NewTimer(cctx, time.Hour), func() { won = "timeout" }).
				Select(ctx)
			cancel()
			return won, nil
		}),
	))
	return b.engine(t), b
}

func (b *scopeBundle) signal(t *testing.T, e *Engine, id uuid.UUID, v string) {
	t.Helper()
	_, err := e.Signal(ctxT(t), SignalRequest{ExecutionID: id, SignalName: goSignal.Name(), Payload: raw(t, v)})
	require.NoError(t, err)
}

func (b *scopeBundle) timerRows(t *testing.T, id uuid.UUID) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT count(*) FROM harvest_timers WHERE execution_id = $1`, id).Scan(&n))
	return n
}

func TestCancelScopes(t *testing.T) {
	t.Parallel()

	t.Run("CancelledTimerNeverFires", func(t *testing.T) {
		t.Parallel()
		e, b := setupScopes(t)
		run := start(t, e, StartRequest{WorkflowName: "scope_timer"})
		eventually(t, "the timer", func() bool { return len(eventTypes(t, b.pool, run.ExecutionID)) == 2 })
		b.signal(t, e, run.ExecutionID, "go")
		eventually(t, "the cancel", func() bool {
			return count(eventTypes(t, b.pool, run.ExecutionID), harvest.EventTimerCanceled) == 1
		})
		require.Equal(t, 1, b.timerRows(t, run.ExecutionID), "only the sleep's timer is left")
		x := waitClosed(t, e, run.ExecutionID)
		require.Equal(t, StateCompleted, x.State)
		require.Equal(t, []string{"WorkflowStarted", "TimerStarted", "SignalReceived", "TimerCanceled", "TimerStarted",
			"TimerFired", "ActivityScheduled", "ActivityCompleted", "WorkflowCompleted"}, eventTypes(t, b.pool, run.ExecutionID))
	})

	t.Run("CancelledRunningActivityLearnsThroughItsHeartbeat", func(t *testing.T) {
		t.Parallel()
		e, b := setupScopes(t)
		run := start(t, e, StartRequest{WorkflowName: "scope_activity"})
		<-b.started
		b.signal(t, e, run.ExecutionID, "cancel it")
		err := <-b.saw
		var ce *harvest.CanceledError
		require.ErrorAs(t, err, &ce)
		require.ErrorIs(t, err, harvest.ErrCanceled)
		eventually(t, "the attempt's failure", func() bool {
			return count(eventTypes(t, b.pool, run.ExecutionID), harvest.EventActivityFailed) == 1
		})
		b.signal(t, e, run.ExecutionID, "done")
		x := waitClosed(t, e, run.ExecutionID)
		require.Equal(t, StateCompleted, x.State)
		require.JSONEq(t, `"done"`, string(x.Output))
		require.Equal(t, []string{"WorkflowStarted", "ActivityScheduled", "SignalReceived", "ActivityCancelRequested",
			"ActivityFailed", "SignalReceived", "WorkflowCompleted"}, eventTypes(t, b.pool, run.ExecutionID))
	})

	t.Run("ScopeInASelectorIsCancelledWhenAnotherCaseWins", func(t *testing.T) {
		t.Parallel()
		e, b := setupScopes(t)
		run := start(t, e, StartRequest{WorkflowName: "scope_select"})
		eventually(t, "the timer", func() bool { return len(eventTypes(t, b.pool, run.ExecutionID)) == 2 })
		b.signal(t, e, run.ExecutionID, "signal")
		x := waitClosed(t, e, run.ExecutionID)
		require.JSONEq(t, `"signal"`, string(x.Output))
		require.Equal(t, []string{"WorkflowStarted", "TimerStarted", "SignalReceived", "TimerCanceled", "WorkflowCompleted"},
			eventTypes(t, b.pool, run.ExecutionID))
	})
}

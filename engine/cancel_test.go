package engine

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/demo"
)

// registerRefundOnCancel adds "refund_on_cancel": it records a charge,
// waits for "go", and on a cancel records a refund on a disconnected
// context before it returns the cancellation.
func (b *testBundle) registerRefundOnCancel(t *testing.T) {
	record := harvest.NewActivity("record_cancel", func(_ *harvest.ActivityContext, tag string) (string, error) { return tag, nil })
	require.NoError(t, b.reg.Register(record, harvest.NewWorkflow("refund_on_cancel", func(ctx harvest.Context, _ string) (string, error) {
		if _, err := record.Execute(ctx, "charge").Get(ctx); err != nil {
			return "", err
		}
		v, err := goSignal.Receive(ctx)
		if !errors.Is(err, harvest.ErrCanceled) {
			return v, err
		}
		dctx := harvest.NewDisconnectedContext(ctx)
		if _, err := record.Execute(dctx, "refund").Get(dctx); err != nil {
			return "", err
		}
		return "", ctx.Err()
	}), harvest.NewWorkflow("linger_on_cancel", func(ctx harvest.Context, _ string) (string, error) {
		// Waits for "go" on a disconnected context once cancelled.
		v, err := goSignal.Receive(ctx)
		if !errors.Is(err, harvest.ErrCanceled) {
			return v, err
		}
		if _, err := goSignal.Receive(harvest.NewDisconnectedContext(ctx)); err != nil {
			return "", err
		}
		return "", ctx.Err()
	})))
}

func TestCooperativeCancel(t *testing.T) {
	t.Parallel()
	setupCancel := func(t *testing.T) (*Engine, *testBundle) {
		t.Helper()
		b := setup(t)
		b.registerRefundOnCancel(t)
		return b.engine(t), b
	}

	t.Run("CleanupOnADisconnectedContextThenCancelled", func(t *testing.T) {
		t.Parallel()
		e, b := setupCancel(t)
		run := start(t, e, StartRequest{WorkflowName: "refund_on_cancel"})
		eventually(t, "the charge", func() bool {
			return count(eventTypes(t, b.pool, run.ExecutionID), harvest.EventActivityCompleted) == 1
		})
		res, err := e.Cancel(ctxT(t), run.ExecutionID, "user asked")
		require.NoError(t, err)
		require.Equal(t, CloseResult{ExecutionID: run.ExecutionID, State: StateRunning, Reason: "user asked", Newly: true, CancelRequested: true}, res)
		x := waitClosed(t, e, run.ExecutionID)
		require.Equal(t, StateCancelled, x.State)
		require.Nil(t, x.Error)
		require.Equal(t, []string{"WorkflowStarted", "ActivityScheduled", "ActivityCompleted", "WorkflowCancelRequested",
			"ActivityScheduled", "ActivityCompleted", "WorkflowCancelled"}, eventTypes(t, b.pool, run.ExecutionID))
		_, err = e.Cancel(ctxT(t), run.ExecutionID, "late")
		var term *TerminalError
		require.ErrorAs(t, err, &term)
		require.Equal(t, StateCancelled, term.State)
	})

	t.Run("CodeThatIgnoresCancellationEndsCancelled", func(t *testing.T) {
		t.Parallel()
		e, b := setupCancel(t)
		run := start(t, e, StartRequest{WorkflowName: "block", WorkflowID: "never-checks"})
		_, err := e.Cancel(ctxT(t), run.ExecutionID, "first")
		require.NoError(t, err)
		x := waitClosed(t, e, run.ExecutionID)
		require.Equal(t, StateCancelled, x.State, "code that ignores cancellation ends CANCELLED on its next block")
		require.Equal(t, []string{"WorkflowStarted", "WorkflowCancelRequested", "WorkflowCancelled"}, eventTypes(t, b.pool, run.ExecutionID))
	})

	t.Run("TheDemoOrderRefundsItsCharge", func(t *testing.T) {
		t.Parallel()
		e, b := setupCancel(t)
		run := start(t, e, StartRequest{WorkflowName: demo.OrderName, Input: raw(t, demo.OrderInput{OrderID: "o-1"})})
		eventually(t, "the charge", func() bool {
			return count(eventTypes(t, b.pool, run.ExecutionID), harvest.EventActivityCompleted) == 1
		})
		_, err := e.Cancel(ctxT(t), run.ExecutionID, "customer left")
		require.NoError(t, err)
		require.Equal(t, StateCancelled, waitClosed(t, e, run.ExecutionID).State)
		require.Equal(t, 1, b.demo.Services.Refunds.Effects())
		types := eventTypes(t, b.pool, run.ExecutionID)
		require.Equal(t, []string{"WorkflowCancelRequested", "ActivityScheduled", "ActivityCompleted", "WorkflowCancelled"}, types[len(types)-4:])
	})

	t.Run("ARepeatWhileRunningWritesNothing", func(t *testing.T) {
		t.Parallel()
		e, b := setupCancel(t)
		run := start(t, e, StartRequest{WorkflowName: "linger_on_cancel"})
		first, err := e.Cancel(ctxT(t), run.ExecutionID, "a")
		require.NoError(t, err)
		require.True(t, first.Newly)
		eventually(t, "the request to be seen", func() bool {
			return len(eventTypes(t, b.pool, run.ExecutionID)) == 2
		})
		d, err := e.Describe(ctxT(t), run.ExecutionID)
		require.NoError(t, err)
		require.NotNil(t, d.CancelRequestedAt, "describe shows the request")
		again, err := e.Cancel(ctxT(t), run.ExecutionID, "b")
		require.NoError(t, err)
		require.Equal(t, CloseResult{ExecutionID: run.ExecutionID, State: StateRunning, Reason: "b", CancelRequested: true}, again)
		require.Equal(t, []string{"WorkflowStarted", "WorkflowCancelRequested"}, eventTypes(t, b.pool, run.ExecutionID))
		_, err = e.Signal(ctxT(t), SignalRequest{ExecutionID: run.ExecutionID, SignalName: "go", Payload: raw(t, "x")})
		require.NoError(t, err)
		require.Equal(t, StateCancelled, waitClosed(t, e, run.ExecutionID).State)
	})
}

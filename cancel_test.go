package harvest_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
)

var (
	refund        = harvest.NewActivity("refund", func(_ *harvest.ActivityContext, n int) (int, error) { return n, nil })
	cleanupOnStop = harvest.NewWorkflow("cleanup", func(ctx harvest.Context, n int) (int, error) {
		_, err := double.Execute(ctx, n).Get(ctx)
		if !errors.Is(err, harvest.ErrCanceled) {
			return 0, err
		}
		dctx := harvest.NewDisconnectedContext(ctx)
		if _, err := refund.Execute(dctx, n).Get(dctx); err != nil {
			return 0, err
		}
		if !ctx.Done().IsReady() {
			return 0, errors.New("done is not ready after a cancel")
		}
		return 0, ctx.Err()
	})
	ignoresCancel = harvest.NewWorkflow("ignores", func(ctx harvest.Context, _ struct{}) (string, error) {
		if err := harvest.Sleep(ctx, time.Hour); err != nil {
			return "", err
		}
		return "slept", nil
	})
	waitsSignal = harvest.NewWorkflow("waits", func(ctx harvest.Context, _ struct{}) (string, error) {
		return approved.Receive(ctx)
	})
)

func cancelRequest(reason string) harvest.Command {
	return harvest.NewCommand(harvest.EventWorkflowCancelRequested, harvest.WorkflowCancelRequestedData{Reason: reason})
}

func TestCooperativeCancel(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) *harvest.Registry {
		t.Helper()
		return harvest.NewRegistry().MustRegister(double, refund, cleanupOnStop, ignoresCancel, waitsSignal)
	}

	t.Run("CleanupOnADisconnectedContextThenCancelled", func(t *testing.T) {
		t.Parallel()
		h := newHistory(t, setup(t), "cleanup", 3)
		res := h.mustTask()
		require.Len(t, res.Commands, 1)
		h.append(cancelRequest("user asked"))
		res = h.mustTask()
		require.False(t, res.Closed)
		require.Len(t, res.Commands, 1)
		require.Equal(t, harvest.EventActivityScheduled, res.Commands[0].Type)
		require.Equal(t, "refund", data[harvest.ActivityScheduledData](t, res.Commands[0]).Name)
		// The cancelled activity's late result is ignored.
		h.append(harvest.NewCommand(harvest.EventActivityCompleted, harvest.ActivityCompletedData{ActivityID: "1", Output: []byte("6")}),
			harvest.NewCommand(harvest.EventActivityCompleted, harvest.ActivityCompletedData{ActivityID: "2", Output: []byte("3")}))
		res = h.mustTask()
		require.True(t, res.Closed)
		require.Len(t, res.Commands, 1)
		require.Equal(t, harvest.EventWorkflowCancelled, res.Commands[0].Type)
		require.Equal(t, "user asked", data[harvest.WorkflowClosedData](t, res.Commands[0]).Reason)
	})

	t.Run("IgnoringCodeEndsCancelledOnItsNextBlock", func(t *testing.T) {
		t.Parallel()
		h := newHistory(t, setup(t), "ignores", struct{}{})
		h.mustTask()
		h.append(cancelRequest(""))
		res := h.mustTask()
		require.True(t, res.Closed)
		require.Equal(t, harvest.EventWorkflowCancelled, res.Commands[len(res.Commands)-1].Type)
	})

	t.Run("SignalReceiveFailsWithCanceledError", func(t *testing.T) {
		t.Parallel()
		h := newHistory(t, setup(t), "waits", struct{}{})
		h.mustTask()
		h.append(cancelRequest("stop"))
		res := h.mustTask()
		require.True(t, res.Closed)
		require.Equal(t, harvest.EventWorkflowCancelled, res.Commands[0].Type)
	})

	t.Run("ACancelInTheStartTaskFailsTheFirstWait", func(t *testing.T) {
		t.Parallel()
		h := newHistory(t, setup(t), "cleanup", 1)
		h.append(cancelRequest(""))
		// The code runs to its first block before the request is
		// delivered: the activity is scheduled, then cancelled.
		res := h.mustTask()
		require.Equal(t, harvest.EventActivityScheduled, res.Commands[0].Type)
		require.False(t, res.Closed)
	})

	t.Run("CanceledErrorMatchesTheSentinel", func(t *testing.T) {
		t.Parallel()
		err := error(&harvest.CanceledError{Reason: "r"})
		require.ErrorIs(t, err, harvest.ErrCanceled)
		require.Equal(t, "canceled", harvest.ToErrorInfo(err).Type)
	})
}

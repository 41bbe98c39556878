package harvest_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
)

var (
	// scopeTimer cancels an hour timer of a scope when "approved" arrives.
	scopeTimer = harvest.NewWorkflow("scope_timer", func(ctx harvest.Context, _ struct{}) (string, error) {
		cctx, cancel := harvest.WithCancel(ctx)
		timer := harvest.NewTimer(cctx, time.Hour)
		if _, err := approved.Receive(ctx); err != nil {
			return "", err
		}
		cancel()
		_, err := timer.Get(ctx)
		if !errors.Is(err, harvest.ErrCanceled) || !cctx.Done().IsReady() || ctx.Err() != nil {
			return "", errors.New("the scope's timer was not cancelled alone")
		}
		return "cancelled", nil
	})
	// scopeActivity cancels its activity when "approved" arrives.
	scopeActivity = harvest.NewWorkflow("scope_activity", func(ctx harvest.Context, _ struct{}) (string, error) {
		cctx, cancel := harvest.WithCancel(ctx)
		f := double.Execute(cctx, 2)
		if _, err := approved.Receive(ctx); err != nil {
			return "", err
		}
		cancel()
		_, err := f.Get(ctx)
		var ce *harvest.CanceledError
		if !errors.As(err, &ce) {
			return "", err
		}
		return "cancelled", nil
	})
	// scopeSelect races a signal against a scope's timer and cancels the
	// scope when the signal wins.
	scopeSelect = harvest.NewWorkflow("scope_select", func(ctx harvest.Context, _ struct{}) (string, error) {
		cctx, cancel := harvest.WithCancel(ctx)
		defer cancel()
		won := ""
		harvest.NewSelector(ctx).
			AddReceive(approved, func() { won, _ = approved.Receive(ctx) }).
			AddFuture(harvest.NewTimer(cctx, time.Hour), func() { won = "timeout" }).
			Select(ctx)
		cancel()
		return won, nil
	})
)

func TestCancelScopes(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) *harvest.Registry {
		t.Helper()
		return harvest.NewRegistry().MustRegister(double, scopeTimer, scopeActivity, scopeSelect)
	}
	types := func(res harvest.TaskResult) []harvest.EventType {
		var out []harvest.EventType
		for _, c := range res.Commands {
			out = append(out, c.Type)
		}
		return out
	}

	t.Run("CancelledTimerIsRecordedAndReplays", func(t *testing.T) {
		t.Parallel()
		h := newHistory(t, setup(t), "scope_timer", struct{}{})
		h.mustTask()
		h.append(signaled("ann"))
		res := h.mustTask()
		require.Equal(t, []harvest.EventType{harvest.EventTimerCanceled, harvest.EventWorkflowCompleted}, types(res))
		require.Equal(t, "1", data[harvest.TimerCanceledData](t, res.Commands[0]).TimerID)
		require.Equal(t, `"cancelled"`, output(t, res))
		// The whole history replays without a mismatch.
		res, err := h.task()
		require.NoError(t, err)
		require.Empty(t, res.Commands)
	})

	t.Run("CancelledActivityFailsAtOnceAndItsLateResultIsIgnored", func(t *testing.T) {
		t.Parallel()
		h := newHistory(t, setup(t), "scope_activity", struct{}{})
		h.mustTask()
		h.append(signaled("ann"))
		res := h.mustTask()
		require.Equal(t, []harvest.EventType{harvest.EventActivityCancelRequested, harvest.EventWorkflowCompleted}, types(res))
		require.Equal(t, "1", data[harvest.ActivityCancelRequestedData](t, res.Commands[0]).ActivityID)
		h.events = h.events[:len(h.events)-1] // replay with the late result before the close
		h.append(completed("1", "4"))
		res, err := h.task()
		require.NoError(t, err)
		require.Equal(t, `"cancelled"`, output(t, res))
	})

	t.Run("ScopeInASelectorIsCancelledWhenAnotherCaseWins", func(t *testing.T) {
		t.Parallel()
		h := newHistory(t, setup(t), "scope_select", struct{}{})
		res := h.mustTask()
		require.Equal(t, []harvest.EventType{harvest.EventTimerStarted}, types(res))
		h.append(signaled("ann"))
		res = h.mustTask()
		require.Equal(t, []harvest.EventType{harvest.EventTimerCanceled, harvest.EventWorkflowCompleted}, types(res))
		require.Equal(t, `"ann"`, output(t, res))
	})

	t.Run("RootCancelReachesTheScope", func(t *testing.T) {
		t.Parallel()
		h := newHistory(t, setup(t), "scope_timer", struct{}{})
		h.mustTask()
		h.append(cancelRequest("stop"))
		res := h.mustTask()
		require.True(t, res.Closed)
		require.Equal(t, []harvest.EventType{harvest.EventWorkflowCancelled}, types(res))
	})
}

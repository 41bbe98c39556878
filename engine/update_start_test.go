package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
)

// updateWithStart sends an add update of n with id to tallyWF's run
// with workflow id wid, starting it if need be.
func updateWithStart(t *testing.T, e *Engine, wid, id string, n int, reuse ReusePolicy) (UpdateWithStartResult, error) {
	t.Helper()
	return e.UpdateWithStart(ctxT(t), UpdateWithStartRequest{
		Start:  StartRequest{WorkflowName: tallyWF.Name(), WorkflowID: wid, Input: raw(t, false), ReusePolicy: reuse, AllowTerminate: true},
		Update: UpdateRequest{Name: addUpd.Name(), UpdateID: id, Args: raw(t, n), Wait: 20 * time.Second},
	})
}

// endTally ends the tally run id and waits for it to close.
func endTally(t *testing.T, e *Engine, res StartResult) {
	t.Helper()
	_, err := e.Signal(ctxT(t), SignalRequest{ExecutionID: res.ExecutionID, SignalName: goSignal.Name(), Payload: raw(t, "end")})
	require.NoError(t, err)
	_, err = e.Result(ctxT(t), res.ExecutionID, 20*time.Second)
	require.NoError(t, err)
}

func TestUpdateWithStart(t *testing.T) {
	t.Parallel()

	t.Run("StartsTheRunOnceAndAnswersARetryFromIt", func(t *testing.T) {
		t.Parallel()
		b, e := setupUpdates(t)
		first, err := updateWithStart(t, e, "cart-1", "u1", 3, "")
		require.NoError(t, err)
		require.True(t, first.Start.StartedFresh)
		require.True(t, first.Update.Completed)
		require.JSONEq(t, "6", string(first.Update.Output))
		again, err := updateWithStart(t, e, "cart-1", "u1", 40, "")
		require.NoError(t, err)
		require.Equal(t, first.Start.ExecutionID, again.Start.ExecutionID)
		require.False(t, again.Start.StartedFresh, "a retry finds the run its first attempt started")
		require.Equal(t, first.Update, again.Update, "and the first answer")
		require.Equal(t, 1, countType(t, b, first.Start.ExecutionID, harvest.EventUpdateCompleted))
	})

	t.Run("AttachesToTheRunningRun", func(t *testing.T) {
		t.Parallel()
		b, e := setupUpdates(t)
		run := start(t, e, StartRequest{WorkflowName: tallyWF.Name(), WorkflowID: "cart-2", Input: raw(t, false)})
		res, err := updateWithStart(t, e, "cart-2", "u1", 5, "")
		require.NoError(t, err)
		require.Equal(t, run.ExecutionID, res.Start.ExecutionID)
		require.False(t, res.Start.StartedFresh)
		require.JSONEq(t, "10", string(res.Update.Output))
		next, err := updateWithStart(t, e, "cart-2", "u2", 1, "")
		require.NoError(t, err)
		require.JSONEq(t, "12", string(next.Update.Output), "a second update id reaches the same run")
		require.Equal(t, 2, countType(t, b, run.ExecutionID, harvest.EventUpdateCompleted))
	})

	t.Run("AClosedRunGivesWayToAFreshOneUnlessRejected", func(t *testing.T) {
		t.Parallel()
		_, e := setupUpdates(t)
		first, err := updateWithStart(t, e, "cart-3", "u1", 1, "")
		require.NoError(t, err)
		endTally(t, e, first.Start)
		_, err = updateWithStart(t, e, "cart-3", "u2", 1, ReuseRejectDuplicate)
		var conflict *ConflictError
		require.ErrorAs(t, err, &conflict)
		fresh, err := updateWithStart(t, e, "cart-3", "u2", 1, "")
		require.NoError(t, err)
		require.True(t, fresh.Start.StartedFresh)
		require.NotEqual(t, first.Start.ExecutionID, fresh.Start.ExecutionID)
		require.JSONEq(t, "2", string(fresh.Update.Output))
		again, err := updateWithStart(t, e, "cart-3", "u1", 1, "")
		require.NoError(t, err)
		require.Equal(t, first.Start.ExecutionID, again.Start.ExecutionID, "the first id still finds its run")
		require.Equal(t, first.Update, again.Update)
	})

	t.Run("TerminateIfRunningReplacesTheRun", func(t *testing.T) {
		t.Parallel()
		_, e := setupUpdates(t)
		run := start(t, e, StartRequest{WorkflowName: tallyWF.Name(), WorkflowID: "cart-4", Input: raw(t, false)})
		res, err := updateWithStart(t, e, "cart-4", "u1", 1, ReuseTerminateIfRunning)
		require.NoError(t, err)
		require.True(t, res.Start.StartedFresh)
		x, err := e.GetExecution(ctxT(t), run.ExecutionID)
		require.NoError(t, err)
		require.Equal(t, StateTerminated, x.State)
	})

	t.Run("ARejectedUpdateLeavesTheRunStarted", func(t *testing.T) {
		t.Parallel()
		b, e := setupUpdates(t)
		res, err := updateWithStart(t, e, "cart-5", "down", -1, "")
		require.ErrorIs(t, err, harvest.ErrUpdateRejected)
		x, err := e.GetExecution(ctxT(t), res.Start.ExecutionID)
		require.NoError(t, err)
		require.Equal(t, StateRunning, x.State)
		require.Zero(t, countType(t, b, x.ExecutionID, harvest.EventSignalReceived))
	})
}

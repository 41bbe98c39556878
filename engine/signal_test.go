package engine

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
)

func TestSignals(t *testing.T) {
	t.Parallel()

	send := func(t *testing.T, e *Engine, id uuid.UUID, payload, key string) (SignalResult, error) {
		return e.Signal(context.Background(), SignalRequest{ExecutionID: id, SignalName: "item", Payload: raw(t, payload), IdempotencyKey: key})
	}

	t.Run("SameKeyTwiceDeliversOnce", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := b.engine(t)
		run := start(t, e, StartRequest{WorkflowName: "collect"})
		first, err := send(t, e, run.ExecutionID, "a", "stripe-evt-1")
		require.NoError(t, err)
		require.True(t, first.Delivered)
		second, err := send(t, e, run.ExecutionID, "a", "stripe-evt-1")
		require.NoError(t, err)
		require.False(t, second.Delivered)
		_, err = send(t, e, run.ExecutionID, "stop", "stop-1")
		require.NoError(t, err)
		x := waitClosed(t, e, run.ExecutionID)
		require.JSONEq(t, `["a"]`, string(x.Output))
		require.Equal(t, 2, count(eventTypes(t, b.pool, run.ExecutionID), harvest.EventSignalReceived))
	})

	t.Run("ConcurrentSameKeyDeliversOnce", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := b.engine(t)
		run := start(t, e, StartRequest{WorkflowName: "collect"})
		const n = 16
		delivered := make(chan bool, n)
		errs := make(chan error, n)
		for range n {
			go func() {
				r, err := send(t, e, run.ExecutionID, "x", "dup")
				errs <- err
				delivered <- r.Delivered
			}()
		}
		yes := 0
		for range n {
			require.NoError(t, <-errs)
			if <-delivered {
				yes++
			}
		}
		require.Equal(t, 1, yes)
		require.Equal(t, 1, count(eventTypes(t, b.pool, run.ExecutionID), harvest.EventSignalReceived))
	})

	t.Run("TerminalCarveOut", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := b.engine(t)
		run := start(t, e, StartRequest{WorkflowName: "collect"})
		_, err := send(t, e, run.ExecutionID, "a", "landed-live")
		require.NoError(t, err)
		_, err = send(t, e, run.ExecutionID, "stop", "")
		require.NoError(t, err)
		waitClosed(t, e, run.ExecutionID)
		before := eventTypes(t, b.pool, run.ExecutionID)

		retry, err := send(t, e, run.ExecutionID, "a", "landed-live")
		require.NoError(t, err, "a retry of a key that landed while live succeeds")
		require.False(t, retry.Delivered)

		_, err = send(t, e, run.ExecutionID, "b", "new-key")
		var term *TerminalError
		require.ErrorAs(t, err, &term)
		require.Equal(t, StateCompleted, term.State)
		_, err = send(t, e, run.ExecutionID, "c", "")
		require.ErrorAs(t, err, &term)
		require.Equal(t, before, eventTypes(t, b.pool, run.ExecutionID), "nothing appended after close")
	})

	t.Run("UnkeyedSignalsAreAtLeastOnce", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := b.engine(t)
		run := start(t, e, StartRequest{WorkflowName: "collect"})
		for range 2 {
			r, err := send(t, e, run.ExecutionID, "same", "")
			require.NoError(t, err)
			require.True(t, r.Delivered)
		}
		_, err := send(t, e, run.ExecutionID, "stop", "")
		require.NoError(t, err)
		x := waitClosed(t, e, run.ExecutionID)
		require.JSONEq(t, `["same","same"]`, string(x.Output))
	})

	t.Run("KeyScopeIsPerExecution", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := b.engine(t)
		r1 := start(t, e, StartRequest{WorkflowName: "collect"})
		r2 := start(t, e, StartRequest{WorkflowName: "collect"})
		a, err := send(t, e, r1.ExecutionID, "v", "evt")
		require.NoError(t, err)
		c, err := send(t, e, r2.ExecutionID, "v", "evt")
		require.NoError(t, err)
		require.True(t, a.Delivered)
		require.True(t, c.Delivered)
	})

	t.Run("UnknownExecution", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := b.engine(t)
		_, err := send(t, e, NewExecutionID(7), "v", "")
		require.ErrorIs(t, err, ErrNotFound)
	})
}

func TestCancelTerminate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e := b.engine(t)
	run := start(t, e, StartRequest{WorkflowName: "block", WorkflowID: "c1"})
	res, err := e.Cancel(context.Background(), run.ExecutionID, "user asked")
	require.NoError(t, err)
	require.True(t, res.Newly)
	require.Equal(t, StateRunning, res.State, "a cancel asks; the code closes the run")
	require.Equal(t, StateCancelled, waitClosed(t, e, run.ExecutionID).State)
	_, err = e.Cancel(context.Background(), run.ExecutionID, "again")
	var term *TerminalError
	require.ErrorAs(t, err, &term)
	tr, err := e.Terminate(context.Background(), run.ExecutionID, "x")
	require.NoError(t, err)
	require.False(t, tr.Newly, "terminating a closed run is a no-op")
	require.Equal(t, StateCancelled, tr.State)
	types := eventTypes(t, b.pool, run.ExecutionID)
	require.Equal(t, string(harvest.EventWorkflowCancelled), types[len(types)-1])

	run2 := start(t, e, StartRequest{WorkflowName: "block", WorkflowID: "c2"})
	tr, err = e.Terminate(context.Background(), run2.ExecutionID, "ops")
	require.NoError(t, err)
	require.True(t, tr.Newly)
	again := start(t, e, StartRequest{WorkflowName: "block", WorkflowID: "c2", ReusePolicy: ReuseRejectDuplicate})
	require.True(t, again.StartedFresh, "a terminated run releases its workflow id")
}

package engine

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
)

// TestDeclaredSignals covers the signals of a workflow that declares them
// (approval: "approved", an approvalSignal) on every path a signal takes.
func TestDeclaredSignals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e := b.engine(t)
	run := start(t, e, StartRequest{WorkflowName: "approval"})
	req := func(name, payload, key string) SignalRequest {
		return SignalRequest{ExecutionID: run.ExecutionID, SignalName: name, Payload: json.RawMessage(payload), IdempotencyKey: key}
	}
	signals := func(t *testing.T) int {
		return count(eventTypes(t, b.pool, run.ExecutionID), harvest.EventSignalReceived) + ledgerRows(t, b, run.ExecutionID)
	}
	paths := map[string]func(SignalRequest) (SignalResult, error){
		"Batched": func(r SignalRequest) (SignalResult, error) { return e.Signal(ctxT(t), r) },
		"Single":  func(r SignalRequest) (SignalResult, error) { return e.signalTx(ctxT(t), r) },
		"InABatch": func(r SignalRequest) (SignalResult, error) {
			reply := e.signalBatch(ctxT(t), []*signalCall{{Req: r, Reply: make(chan signalReply, 1)}})[0]
			require.False(t, reply.Single)
			return reply.Res, reply.Err
		},
	}

	for name, send := range paths {
		t.Run(name+"RefusesAndAppendsNothing", func(t *testing.T) {
			before := signals(t)
			_, err := send(req("aproved", `{"by":"ann"}`, ""))
			var unknown *harvest.UnknownSignalError
			require.ErrorAs(t, err, &unknown)
			require.Equal(t, []string{"approved"}, unknown.Declared)
			_, err = send(req("approved", `{"by":5}`, "bad-"+name))
			var payload *harvest.PayloadError
			require.ErrorAs(t, err, &payload)
			require.Contains(t, err.Error(), "approvalSignal")
			require.Equal(t, before, signals(t))
		})
	}

	t.Run("KeyedRetryOfADeliveredSignalIsADuplicate", func(t *testing.T) {
		first, err := e.Signal(ctxT(t), req("approved", `{"by":"ann"}`, "k1"))
		require.NoError(t, err)
		require.True(t, first.Delivered)
		before := signals(t)
		for name, send := range paths {
			for _, r := range []SignalRequest{req("approved", `"not an object"`, "k1"), req("undeclared", `1`, "k1")} {
				res, err := send(r)
				require.NoError(t, err, name)
				require.False(t, res.Delivered, name)
			}
		}
		require.Equal(t, before, signals(t))
		x := waitClosed(t, e, run.ExecutionID)
		require.JSONEq(t, `"ann"`, string(x.Output))
	})

	t.Run("UndeclaringWorkflowAcceptsAnyName", func(t *testing.T) {
		other := start(t, e, StartRequest{WorkflowName: "collect"})
		res, err := e.Signal(ctxT(t), SignalRequest{ExecutionID: other.ExecutionID, SignalName: "anything", Payload: json.RawMessage(`{"x":1}`)})
		require.NoError(t, err)
		require.True(t, res.Delivered)
	})
}

func TestDeclaredSignalsWithStart(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e := b.engine(t)
	sws := func(id, name, payload, key string) (SignalWithStartResult, error) {
		return e.SignalWithStart(ctxT(t), SignalWithStartRequest{Start: StartRequest{WorkflowName: "approval", WorkflowID: id},
			SignalName: name, SignalPayload: json.RawMessage(payload), IdempotencyKey: key})
	}

	t.Run("RefusedSignalStartsNothing", func(t *testing.T) {
		_, err := sws("fresh", "nope", `{}`, "")
		require.ErrorIs(t, err, harvest.ErrUnknownSignal)
		_, err = sws("fresh", "approved", `[1]`, "k")
		require.ErrorIs(t, err, harvest.ErrInvalidPayload)
		require.Zero(t, runsOf(t, b, "fresh"))
	})

	t.Run("RefusedSignalToARunningRunAppendsNothing", func(t *testing.T) {
		run := start(t, e, StartRequest{WorkflowName: "approval", WorkflowID: "live"})
		_, err := sws("live", "nope", `{}`, "")
		require.ErrorIs(t, err, harvest.ErrUnknownSignal)
		require.Zero(t, ledgerRows(t, b, run.ExecutionID))
		require.Equal(t, 1, runsOf(t, b, "live"))
	})

	t.Run("KeyedRetryIsADuplicate", func(t *testing.T) {
		first, err := sws("retried", "approved", `{"by":"bo"}`, "k1")
		require.NoError(t, err)
		require.True(t, first.SignalDelivered)
		again, err := sws("retried", "nope", `"x"`, "k1")
		require.NoError(t, err)
		require.False(t, again.SignalDelivered)
		require.Equal(t, first.ExecutionID, again.ExecutionID)
		require.Equal(t, 1, ledgerRows(t, b, first.ExecutionID))
	})
}

// ledgerRows counts the signal ledger rows of a run.
func ledgerRows(t *testing.T, b *testBundle, id uuid.UUID) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT count(*) FROM harvest_signals WHERE execution_id = $1`, id).Scan(&n))
	return n
}

// runsOf counts the runs of the approval workflow holding workflow id.
func runsOf(t *testing.T, b *testBundle, workflowID string) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(),
		`SELECT count(*) FROM harvest_executions WHERE workflow_name = 'approval' AND workflow_id = $1`, workflowID).Scan(&n))
	return n
}

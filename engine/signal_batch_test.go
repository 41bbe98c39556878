package engine

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
)

// TestSignalBatch forces one batch mixing every case of a signal.
func TestSignalBatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e := b.engine(t)
	live := start(t, e, StartRequest{WorkflowName: "collect"})
	other := start(t, e, StartRequest{WorkflowName: "collect"})
	closed := start(t, e, StartRequest{WorkflowName: "block", Input: raw(t, "complete")})
	waitClosed(t, e, closed.ExecutionID)
	before, err := e.Signal(ctxT(t), SignalRequest{ExecutionID: live.ExecutionID, SignalName: "item", Payload: raw(t, "old"), IdempotencyKey: "k-old"})
	require.NoError(t, err)
	require.True(t, before.Delivered)

	sig := func(run StartResult, payload, key string) *signalCall {
		return &signalCall{Req: SignalRequest{ExecutionID: run.ExecutionID, SignalName: "item", Payload: raw(t, payload), IdempotencyKey: key},
			Reply: make(chan signalReply, 1)}
	}
	unknown := StartResult{ExecutionID: NewExecutionID(7)}
	replies := e.signalBatch(ctxT(t), []*signalCall{
		sig(live, "a", "k1"),     // 0 delivered
		sig(live, "a", "k1"),     // 1 duplicate inside the batch
		sig(live, "x", "k-old"),  // 2 duplicate of a committed key
		sig(other, "b", "k1"),    // 3 the same key on another run: its own scope
		sig(live, "c", ""),       // 4 unkeyed: delivered
		sig(closed, "d", "k9"),   // 5 closed run: refused
		sig(unknown, "e", "k10"), // 6 unknown run
		sig(live, "stop", "k2"),  // 7 delivered after the others
	})
	delivered := []bool{true, false, false, true, true, false, false, true}
	for i, r := range replies {
		require.False(t, r.Single, "reply %d", i)
		if i == 5 {
			require.ErrorAs(t, r.Err, new(*TerminalError))
			continue
		}
		if i == 6 {
			require.ErrorIs(t, r.Err, ErrNotFound)
			continue
		}
		require.NoError(t, r.Err, "reply %d", i)
		require.Equal(t, delivered[i], r.Res.Delivered, "reply %d", i)
	}
	x := waitClosed(t, e, live.ExecutionID)
	require.JSONEq(t, `["old","a","c"]`, string(x.Output), "delivered in batch order, once each")
	require.Equal(t, 4, count(eventTypes(t, b.pool, live.ExecutionID), harvest.EventSignalReceived))
	require.Equal(t, 1, count(eventTypes(t, b.pool, other.ExecutionID), harvest.EventSignalReceived))
	require.Equal(t, 0, count(eventTypes(t, b.pool, closed.ExecutionID), harvest.EventSignalReceived))
}

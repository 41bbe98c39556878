package engine

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
)

// The single signal path (no batcher: stopped, or a batch that failed)
// deduplicates a key on its own: a duplicate is answered, not delivered.
func TestSingleSignalPathDeduplicates(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e := b.engine(t)
	e.in.Signals.Store(nil) // every signal takes signalTx
	run := start(t, e, StartRequest{WorkflowName: "approval"})
	req := SignalRequest{ExecutionID: run.ExecutionID, SignalName: "approved", Payload: json.RawMessage(`{"by":"ann"}`),
		IdempotencyKey: "evt-1"}
	first, err := e.Signal(ctxT(t), req)
	require.NoError(t, err)
	require.True(t, first.Delivered)
	again, err := e.Signal(ctxT(t), req)
	require.NoError(t, err)
	require.False(t, again.Delivered, "a duplicate key is answered, not delivered")
	require.Equal(t, 1, count(eventTypes(t, b.pool, run.ExecutionID), harvest.EventSignalReceived))
	require.Equal(t, 1, ledgerRows(t, b, run.ExecutionID))
}

package client_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/client"
	"github.com/harvestd/harvest/demo"
)

// TestDeclaredSignalErrors: a workflow that declares its signals refuses
// others with errors the client classifies.
func TestDeclaredSignalErrors(t *testing.T) {
	t.Parallel()
	b := setupServer(t)
	run, err := b.api.Start(ctxT(t), "approval", client.StartRequest{WorkflowID: "a-1"})
	require.NoError(t, err)
	// The same name with another payload type: what a drifted sender sends.
	drifted := client.SignalOf(b.api, harvest.NewSignal[int](demo.ApprovedSignal))

	t.Run("UnknownSignal", func(t *testing.T) {
		_, err := b.api.Signal(ctxT(t), run.ExecutionID, "aproved", demo.Approval{By: "ann"}, client.SignalOptions{})
		require.ErrorIs(t, err, client.ErrUnknownSignal)
		require.NotErrorIs(t, err, client.ErrInvalidPayload)
		var apiErr *client.Error
		require.ErrorAs(t, err, &apiErr)
		require.Equal(t, client.CodeUnknownSignal, apiErr.Code)
		require.Equal(t, "aproved", apiErr.Field("signal_name"))
	})

	t.Run("InvalidPayload", func(t *testing.T) {
		_, err := drifted.SendIdempotent(ctxT(t), run.ExecutionID, 5, "k-drifted")
		require.ErrorIs(t, err, client.ErrInvalidPayload)
		require.NotErrorIs(t, err, client.ErrUnknownSignal)
		require.Contains(t, err.Error(), "demo.Approval")
	})

	t.Run("SignalWithStart", func(t *testing.T) {
		_, err := b.api.SignalWithStart(ctxT(t), "approval", client.SignalWithStartRequest{WorkflowID: "a-2", SignalName: "nope"})
		require.ErrorIs(t, err, client.ErrUnknownSignal)
		_, err = b.api.SignalWithStart(ctxT(t), "approval", client.SignalWithStartRequest{WorkflowID: "a-2",
			SignalName: demo.ApprovedSignal, SignalPayload: "ann"})
		require.ErrorIs(t, err, client.ErrInvalidPayload)
	})

	t.Run("DeclaredSignalIsDelivered", func(t *testing.T) {
		res, err := client.SignalOf(b.api, demo.Approved).SendIdempotent(ctxT(t), run.ExecutionID, demo.Approval{By: "ann"}, "k-ok")
		require.NoError(t, err)
		require.True(t, res.SignalDelivered)
	})
}

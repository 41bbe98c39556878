package client_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/client"
	"github.com/harvestd/harvest/internal/testworkflows"
)

// TestResetClient resets a running run to its first task: the answer
// names the new run, a retry with the key answers it again, and a bad
// point is a typed refusal.
func TestResetClient(t *testing.T) {
	t.Parallel()
	b := setupServer(t)
	ctx := context.Background()
	run, err := b.api.Start(ctx, testworkflows.Tally.Name(), client.StartRequest{})
	require.NoError(t, err)
	o := client.ResetOptions{Point: "first", Reason: "new code", IdempotencyKey: "reset-1"}
	res, err := b.api.Reset(ctx, run.ExecutionID, o)
	require.NoError(t, err)
	require.True(t, res.NewlyReset)
	require.True(t, res.Terminated)
	require.Equal(t, run.ExecutionID, res.ReplacedExecutionID)
	require.NotEqual(t, run.ExecutionID, res.ExecutionID)
	again, err := b.api.Reset(ctx, run.ExecutionID, o)
	require.NoError(t, err)
	require.False(t, again.NewlyReset)
	require.Equal(t, res.ExecutionID, again.ExecutionID)
	far := int64(99)
	_, err = b.api.Reset(ctx, res.ExecutionID, client.ResetOptions{EventID: &far})
	require.ErrorIs(t, err, client.ErrInvalid)
	_, err = b.api.Reset(ctx, "", o)
	require.Error(t, err)
}

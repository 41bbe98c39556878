package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/client"
	"github.com/harvestd/harvest/internal/testworkflows"
)

// TestUpdateClient sends typed updates: an id is applied once, a handler's
// error and the validator's refusal come back typed.
func TestUpdateClient(t *testing.T) {
	t.Parallel()
	b := setupServer(t)
	ctx := context.Background()
	run, err := b.api.Start(ctx, testworkflows.Tally.Name(), client.StartRequest{})
	require.NoError(t, err)
	add := client.UpdateOf(b.api, testworkflows.Add)
	for _, n := range []int{4, 40} { // the second is a retry: its args are not applied
		total, err := add.Do(ctx, run.ExecutionID, "add-4", n, 10*time.Second)
		require.NoError(t, err)
		require.Equal(t, 4, total)
	}
	total, err := add.Do(ctx, run.ExecutionID, "add-2", 2, 0)
	require.NoError(t, err)
	require.Equal(t, 6, total)

	_, err = add.Do(ctx, run.ExecutionID, "add-13", 13, 0)
	var failed *client.UpdateFailedError
	require.ErrorAs(t, err, &failed)
	require.Contains(t, failed.Info.Message, "unlucky")
	_, err = add.Do(ctx, run.ExecutionID, "down", -1, 0)
	require.ErrorIs(t, err, client.ErrUpdateRejected)
	_, err = b.api.UpdateIdempotent(ctx, run.ExecutionID, "nope", "u", 1, 0)
	require.ErrorIs(t, err, client.ErrUnknownUpdate)
	_, err = b.api.UpdateIdempotent(ctx, run.ExecutionID, testworkflows.Add.Name(), "", 1, 0)
	require.ErrorIs(t, err, client.ErrInvalid)
}

// TestUpdateWithStartClient starts a run by its first update, and updates
// the running run by the next; a retried id finds the same run and answer.
func TestUpdateWithStartClient(t *testing.T) {
	t.Parallel()
	b := setupServer(t)
	ctx := context.Background()
	req := client.UpdateWithStartRequest{WorkflowID: "tally-client", UpdateName: testworkflows.Add.Name(), UpdateID: "first", Args: 3}
	first, err := b.api.UpdateWithStart(ctx, testworkflows.Tally.Name(), req)
	require.NoError(t, err)
	require.True(t, first.StartedFresh)
	require.Equal(t, "completed", first.Outcome)
	require.JSONEq(t, "3", string(first.Result))
	req.Args = 30
	again, err := b.api.UpdateWithStart(ctx, testworkflows.Tally.Name(), req)
	require.NoError(t, err)
	require.False(t, again.StartedFresh)
	require.Equal(t, first.ExecutionID, again.ExecutionID)
	require.JSONEq(t, "3", string(again.Result), "a retry gets the first answer")
	req.UpdateID, req.Args = "second", 1
	next, err := b.api.UpdateWithStart(ctx, testworkflows.Tally.Name(), req)
	require.NoError(t, err)
	require.JSONEq(t, "4", string(next.Result))
	req.UpdateID = ""
	_, err = b.api.UpdateWithStart(ctx, testworkflows.Tally.Name(), req)
	require.ErrorIs(t, err, client.ErrInvalid)
}

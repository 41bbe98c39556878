package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/client"
)

func TestQueryClient(t *testing.T) {
	t.Parallel()
	b := setupServer(t)
	ctx := context.Background()
	run, err := b.api.Start(ctx, "query_counter", client.StartRequest{})
	require.NoError(t, err)
	id := run.ExecutionID
	for range 2 {
		_, err = b.api.Signal(ctx, id, "ping", "x", client.SignalOptions{})
		require.NoError(t, err)
	}
	var n int
	require.NoError(t, b.api.Query(ctx, id, "count", nil, &n))
	require.Equal(t, 2, n)
	require.NoError(t, b.api.Query(ctx, id, "plus", 40, &n))
	require.Equal(t, 42, n)
	require.ErrorIs(t, b.api.Query(ctx, id, "nope", nil, &n), client.ErrUnknownQuery)
	require.ErrorIs(t, b.api.Query(ctx, id, "sleepy", nil, &n), client.ErrQueryCommand)
	_, err = b.api.Signal(ctx, id, "ping", "stop", client.SignalOptions{})
	require.NoError(t, err)
	_, _, err = b.api.Result(ctx, id, 20*time.Second)
	require.NoError(t, err)
	require.NoError(t, b.api.Query(ctx, id, "count", nil, &n))
	require.Equal(t, 2, n)
}

package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/api"
	"github.com/harvestd/harvest/client"
	"github.com/harvestd/harvest/engine"
)

// TestQueryClient queries a running run (from cached state, then with the
// cache off by replay) and a closed one, with and without arguments.
func TestQueryClient(t *testing.T) {
	t.Parallel()
	apiConfig := func(e *engine.Engine) api.Config { return api.Config{Gates: e} }
	for _, tc := range []struct {
		name   string
		cache  func(*engine.Config)
		cached bool
	}{
		{"Cached", func(*engine.Config) {}, true},
		{"Replayed", func(c *engine.Config) { c.StateCacheEntries = -1 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupServerEngine(t, apiConfig, tc.cache)
			testQueryClient(t, b, tc.cached)
		})
	}

	t.Run("BoundedWaitTimesOut", func(t *testing.T) {
		t.Parallel()
		b := setupServerEngine(t, apiConfig, func(c *engine.Config) { c.QueryTimeout = time.Nanosecond })
		run, err := b.api.Start(context.Background(), "query_counter", client.StartRequest{})
		require.NoError(t, err)
		var n int
		require.ErrorIs(t, b.api.Query(context.Background(), run.ExecutionID, "count", nil, &n), client.ErrQueryTimeout)
	})
}

func testQueryClient(t *testing.T, b *serverBundle, cached bool) {
	ctx := context.Background()
	run, err := b.api.Start(ctx, "query_counter", client.StartRequest{})
	require.NoError(t, err)
	id := run.ExecutionID
	for range 2 {
		_, err = b.api.Signal(ctx, id, "ping", "x", client.SignalOptions{})
		require.NoError(t, err)
	}
	var n int
	if cached {
		// Answered from cached state once the pings' task has run.
		deadline := time.Now().Add(20 * time.Second)
		for b.engine.StateCacheStats().QueryHits == 0 || n != 2 {
			require.True(t, time.Now().Before(deadline), "no query answered from cached state")
			require.NoError(t, b.api.Query(ctx, id, "count", nil, &n))
		}
	}
	hits := b.engine.StateCacheStats().QueryHits
	require.NoError(t, b.api.Query(ctx, id, "count", nil, &n))
	require.Equal(t, 2, n)
	require.NoError(t, b.api.Query(ctx, id, "plus", 40, &n))
	require.Equal(t, 42, n)
	require.ErrorIs(t, b.api.Query(ctx, id, "nope", nil, &n), client.ErrUnknownQuery)
	require.ErrorIs(t, b.api.Query(ctx, id, "sleepy", nil, &n), client.ErrQueryCommand)
	if cached {
		require.Equal(t, hits+4, b.engine.StateCacheStats().QueryHits, "the running run answered from cached state")
	} else {
		require.Zero(t, b.engine.StateCacheStats().QueryHits)
	}
	_, err = b.api.Signal(ctx, id, "ping", "stop", client.SignalOptions{})
	require.NoError(t, err)
	_, _, err = b.api.Result(ctx, id, 20*time.Second)
	require.NoError(t, err)
	hits = b.engine.StateCacheStats().QueryHits
	require.NoError(t, b.api.Query(ctx, id, "count", nil, &n))
	require.Equal(t, 2, n)
	require.Equal(t, hits, b.engine.StateCacheStats().QueryHits, "a closed run replays")
}

package api

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine"
	"github.com/harvestd/harvest/internal/testworkflows"
)

// TestQueryHTTP queries a running run (from cached state, and with the
// cache off by replay) and a closed one, with GET (no arguments) and POST
// (arguments), and a query past the engine's bound.
func TestQueryHTTP(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		cache  func(*engine.Config)
		cached bool
	}{
		{"Cached", nil, true},
		{"Replayed", func(c *engine.Config) { c.StateCacheEntries = -1 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			testQueryHTTP(t, setupWith(t, tc.cache), tc.cached)
		})
	}

	t.Run("ReservedNamesAreHarvests", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		id := startTallies(t, b, 1)[0]
		requireError(t, b.do(t, http.MethodPost, "/workflows/"+id+"/query/"+harvest.UpdateQueryPrefix+testworkflows.Add.Name(),
			map[string]any{"args": 1}), http.StatusBadRequest, codeInvalidArgument)
	})

	t.Run("BoundedWaitGets408", func(t *testing.T) {
		t.Parallel()
		b := setupWith(t, func(c *engine.Config) { c.QueryTimeout = time.Nanosecond })
		r := b.do(t, http.MethodPost, "/workflows/query_counter/start", map[string]any{})
		require.Equal(t, http.StatusCreated, r.Status, "body %s", r.Raw)
		id := r.Body["execution_id"].(string)
		requireError(t, b.do(t, http.MethodGet, "/workflows/"+id+"/query/count", nil), http.StatusRequestTimeout, codeQueryTimeout)
		requireError(t, b.do(t, http.MethodPost, "/workflows/"+id+"/query/plus", map[string]any{"args": 1}), http.StatusRequestTimeout, codeQueryTimeout)
	})
}

func testQueryHTTP(t *testing.T, b *testBundle, cached bool) {
	r := b.do(t, http.MethodPost, "/workflows/query_counter/start", map[string]any{})
	require.Equal(t, http.StatusCreated, r.Status, "body %s", r.Raw)
	id := r.Body["execution_id"].(string)
	for range 2 {
		r = b.do(t, http.MethodPost, "/workflows/"+id+"/signal/ping", `"x"`)
		require.Less(t, r.Status, 300, "body %s", r.Raw)
	}
	if cached {
		// Answered from cached state once the pings' task has run.
		deadline := time.Now().Add(20 * time.Second)
		for b.engine.StateCacheStats().QueryHits == 0 || r.Body["result"] != 2.0 {
			require.True(t, time.Now().Before(deadline), "no query answered from cached state")
			r = b.do(t, http.MethodGet, "/workflows/"+id+"/query/count", nil)
		}
	}
	hits := b.engine.StateCacheStats().QueryHits
	r = b.do(t, http.MethodGet, "/workflows/"+id+"/query/count", nil)
	require.Equal(t, http.StatusOK, r.Status, "body %s", r.Raw)
	require.Equal(t, map[string]any{"execution_id": id, "query": "count", "result": 2.0}, r.Body)
	r = b.do(t, http.MethodPost, "/workflows/"+id+"/query/plus", map[string]any{"args": 40})
	require.Equal(t, http.StatusOK, r.Status, "body %s", r.Raw)
	require.Equal(t, 42.0, r.Body["result"])
	requireError(t, b.do(t, http.MethodGet, "/workflows/"+id+"/query/nope", nil), http.StatusNotFound, codeUnknownQuery)
	requireError(t, b.do(t, http.MethodPost, "/workflows/"+id+"/query/plus", `{"args":"a"}`), http.StatusBadRequest, codeInvalidArgument)
	requireError(t, b.do(t, http.MethodPost, "/workflows/"+id+"/query/plus", `{`), http.StatusBadRequest, codeInvalidJSON)
	requireError(t, b.do(t, http.MethodGet, "/workflows/"+id+"/query/sleepy", nil), http.StatusBadRequest, codeQueryCommand)
	if cached {
		require.Equal(t, hits+5, b.engine.StateCacheStats().QueryHits, "the running run answered from cached state")
	} else {
		require.Zero(t, b.engine.StateCacheStats().QueryHits)
	}

	r = b.do(t, http.MethodPost, "/workflows/"+id+"/signal/ping", `"stop"`)
	require.Less(t, r.Status, 300, "body %s", r.Raw)
	r = b.do(t, http.MethodGet, "/workflows/"+id+"/result?wait=20s", nil)
	require.Equal(t, http.StatusOK, r.Status, "body %s", r.Raw)
	hits = b.engine.StateCacheStats().QueryHits
	r = b.do(t, http.MethodGet, "/workflows/"+id+"/query/count", nil)
	require.Equal(t, http.StatusOK, r.Status, "body %s", r.Raw)
	require.Equal(t, 2.0, r.Body["result"])
	require.Equal(t, hits, b.engine.StateCacheStats().QueryHits, "a closed run replays")
}

package engine

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/internal/testworkflows"
)

// TestQuery queries a running and a closed run, with and without
// arguments, with the state cache on (the running run answers from its
// cached state) and off (every query replays).
func TestQuery(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		cache  func(*Config)
		cached bool
	}{
		{"Cached", func(*Config) {}, true},
		{"Replayed", func(c *Config) { c.StateCacheEntries = -1 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			require.NoError(t, b.reg.Register(testworkflows.QueryCounter))
			e := b.engine(t, tc.cache)
			testQuery(t, b, e, tc.cached)
		})
	}
}

func testQuery(t *testing.T, b *testBundle, e *Engine, cached bool) {
	run := start(t, e, StartRequest{WorkflowName: "query_counter"})
	id := run.ExecutionID
	query := func(name, args string) (json.RawMessage, error) {
		var a json.RawMessage
		if args != "" {
			a = json.RawMessage(args)
		}
		return e.Query(ctxT(t), id, name, a)
	}
	ping := func(v string) {
		_, err := e.Signal(ctxT(t), SignalRequest{ExecutionID: id, SignalName: "ping", Payload: json.RawMessage(`"` + v + `"`)})
		require.NoError(t, err)
	}
	out, err := query("count", "")
	require.NoError(t, err)
	require.JSONEq(t, `0`, string(out))
	ping("x")
	ping("x")
	if cached {
		eventually(t, "the run cached past the pings", func() bool {
			next, ok := e.wf.CachedNext(id)
			return ok && next == 3
		})
	}
	hits := e.StateCacheStats().QueryHits
	out, err = query("count", "")
	require.NoError(t, err)
	require.JSONEq(t, `2`, string(out))
	out, err = query("plus", "40")
	require.NoError(t, err)
	require.JSONEq(t, `42`, string(out))
	before := len(eventTypes(t, b.pool, id))

	_, err = query("nope", "")
	require.ErrorIs(t, err, harvest.ErrUnknownQuery)
	_, err = query("fails", "")
	require.EqualError(t, err, "handler says no")
	_, err = query("plus", `"a"`)
	require.ErrorIs(t, err, harvest.ErrQueryArgs)
	_, err = query("sleepy", "")
	require.ErrorIs(t, err, harvest.ErrQueryCommand)
	_, ok := e.wf.CachedNext(id)
	require.False(t, ok, "a query that issued a command leaves no cached state")
	require.Len(t, eventTypes(t, b.pool, id), before, "queries append nothing")
	if cached {
		require.Equal(t, hits+6, e.StateCacheStats().QueryHits, "the running run answered from its cached state")
	} else {
		require.Zero(t, e.StateCacheStats().QueryHits)
	}

	ping("x")
	ping("stop")
	x := waitClosed(t, e, id)
	require.JSONEq(t, `3`, string(x.Output))
	hits = e.StateCacheStats().QueryHits
	out, err = query("count", "")
	require.NoError(t, err)
	require.JSONEq(t, `3`, string(out))
	require.Equal(t, hits, e.StateCacheStats().QueryHits, "a closed run replays")

	_, err = e.Query(ctxT(t), [16]byte{1}, "count", nil)
	require.ErrorIs(t, err, ErrNotFound)
}

func TestQueryTimeout(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.reg.Register(testworkflows.QueryCounter))
	e := b.engine(t, func(c *Config) { c.QueryTimeout = time.Nanosecond })
	run := start(t, e, StartRequest{WorkflowName: "query_counter"})
	_, err := e.Query(ctxT(t), run.ExecutionID, "count", nil)
	require.ErrorIs(t, err, ErrQueryTimeout)
}

package engine

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/internal/testworkflows"
)

func TestQuery(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.reg.Register(testworkflows.QueryCounter))
	e := b.engine(t)
	run := start(t, e, StartRequest{WorkflowName: "query_counter"})
	id := run.ExecutionID
	query := func(name, args string) (json.RawMessage, error) {
		var a json.RawMessage
		if args != "" {
			a = json.RawMessage(args)
		}
		return e.Query(ctxT(t), id, name, a)
	}
	out, err := query("count", "")
	require.NoError(t, err)
	require.JSONEq(t, `0`, string(out))
	for range 2 {
		_, err := e.Signal(ctxT(t), SignalRequest{ExecutionID: id, SignalName: "ping", Payload: json.RawMessage(`"x"`)})
		require.NoError(t, err)
	}
	out, err = query("count", "")
	require.NoError(t, err)
	require.JSONEq(t, `2`, string(out))
	out, err = query("plus", "40")
	require.NoError(t, err)
	require.JSONEq(t, `42`, string(out))
	before := len(eventTypes(t, b.pool, id))

	_, err = query("nope", "")
	require.ErrorIs(t, err, harvest.ErrUnknownQuery)
	_, err = query("sleepy", "")
	require.ErrorIs(t, err, harvest.ErrQueryCommand)
	_, err = query("fails", "")
	require.EqualError(t, err, "handler says no")
	_, err = query("plus", `"a"`)
	require.ErrorIs(t, err, harvest.ErrQueryArgs)
	require.Len(t, eventTypes(t, b.pool, id), before, "queries append nothing")

	_, err = e.Signal(ctxT(t), SignalRequest{ExecutionID: id, SignalName: "ping", Payload: json.RawMessage(`"x"`)})
	require.NoError(t, err)
	_, err = e.Signal(ctxT(t), SignalRequest{ExecutionID: id, SignalName: "ping", Payload: json.RawMessage(`"stop"`)})
	require.NoError(t, err)
	x := waitClosed(t, e, id)
	require.JSONEq(t, `3`, string(x.Output))
	out, err = query("count", "")
	require.NoError(t, err)
	require.JSONEq(t, `3`, string(out))

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

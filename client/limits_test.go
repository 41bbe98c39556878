package client_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/api"
	"github.com/harvestd/harvest/client"
	"github.com/harvestd/harvest/engine"
	"github.com/harvestd/harvest/internal/limitstore"
	"github.com/harvestd/harvest/internal/pgtest"
)

func TestLimits(t *testing.T) {
	t.Parallel()
	store, err := limitstore.Load(context.Background(), pgtest.NewPool(t))
	require.NoError(t, err)
	b := setupServerWith(t, func(e *engine.Engine) api.Config { return api.Config{Gates: e, FlowLimits: store} })

	wf, err := b.api.SetLimit(ctxT(t), client.Limit{Kind: client.LimitWorkflow, Name: "report", MaxRunning: 1, KeyPointer: "/customer"})
	require.NoError(t, err)
	require.Equal(t, "report", wf.Name)
	require.Equal(t, 1, wf.MaxRunning)
	require.False(t, wf.UpdatedAt.IsZero())
	require.Contains(t, string(wf.Raw), `"key_pointer":"/customer"`)

	again, err := b.api.SetLimit(ctxT(t), client.Limit{Kind: client.LimitWorkflow, Name: "report", MaxRunning: 1, KeyPointer: "/customer"})
	require.NoError(t, err, "the same limit again")
	require.True(t, again.UpdatedAt.Equal(wf.UpdatedAt), "changes nothing")

	act, err := b.api.SetLimit(ctxT(t), client.Limit{Kind: client.LimitActivity, Name: "render report", PerSecond: 0.5, Burst: 2})
	require.NoError(t, err, "a name that needs escaping")
	require.Equal(t, "render report", act.Name)
	require.Equal(t, 0.5, act.PerSecond)

	for _, bad := range []client.Limit{
		{Kind: client.LimitWorkflow, Name: "report", MaxRunning: -1},
		{Kind: client.LimitWorkflow, Name: "report", PerSecond: 1},
		{Kind: client.LimitActivity, Name: "x", Burst: 3},
		{Kind: client.LimitWorkflow, Name: "report", MaxRunning: 1, KeyPointer: "customer"},
		{Kind: "shard", Name: "report"},
		{Kind: client.LimitWorkflow},
	} {
		_, err := b.api.SetLimit(ctxT(t), bad)
		require.ErrorIs(t, err, client.ErrInvalid, "%+v", bad)
	}

	list, err := b.api.Limits(ctxT(t))
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, []string{client.LimitActivity, client.LimitWorkflow}, []string{list[0].Kind, list[1].Kind})
	require.Equal(t, 1, list[1].MaxRunning, "nothing refused was stored")
	require.Contains(t, string(list[0].Raw), `"per_second":0.5`)

	require.NoError(t, b.api.DeleteLimit(ctxT(t), client.LimitWorkflow, "report"))
	require.ErrorIs(t, b.api.DeleteLimit(ctxT(t), client.LimitWorkflow, "report"), client.ErrNotFound)
	require.ErrorIs(t, b.api.DeleteLimit(ctxT(t), "shard", "report"), client.ErrInvalid)
	list, err = b.api.Limits(ctxT(t))
	require.NoError(t, err)
	require.Len(t, list, 1)
}

package client_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/client"
	"github.com/harvestd/harvest/demo"
)

func TestServerChildren(t *testing.T) {
	t.Parallel()
	b := setupServer(t)
	run, err := b.api.Start(ctxT(t), demo.ParentChainName, client.StartRequest{Input: map[string]int{"children": 2, "activities": 1}})
	require.NoError(t, err)
	res, closed, err := b.api.Result(ctxT(t), run.ExecutionID, 20*time.Second)
	require.NoError(t, err)
	require.True(t, closed)
	require.Equal(t, "COMPLETED", res.State)

	l, err := b.api.Children(ctxT(t), run.ExecutionID)
	require.NoError(t, err)
	require.Equal(t, run.ExecutionID, l.ExecutionID)
	require.Len(t, l.Children, 2)
	for _, c := range l.Children {
		require.Equal(t, "COMPLETED", c.State)
		require.Equal(t, demo.NoopChainName, c.WorkflowName)
		require.NotEmpty(t, c.ExecutionID)
	}
	d, err := b.api.Describe(ctxT(t), run.ExecutionID)
	require.NoError(t, err)
	require.Equal(t, l.Children, d.Children)
	_, err = b.api.Children(ctxT(t), "")
	require.Error(t, err)
}

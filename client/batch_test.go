package client_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/client"
	"github.com/harvestd/harvest/demo"
)

func TestServerBatchStart(t *testing.T) {
	t.Parallel()
	b := setupServer(t)
	items := []client.BatchItem{
		{WorkflowName: demo.NoopChainName, IdempotencyKey: "cb-1", Input: map[string]int{"activities": 1}},
		{WorkflowName: demo.NoopChainName, WorkflowID: "cb-wid", Input: map[string]int{"activities": 1}},
		{WorkflowName: "no_such_workflow", IdempotencyKey: "cb-3"},
	}
	res, err := b.api.BatchStart(ctxT(t), items)
	require.NoError(t, err)
	require.Len(t, res, 3)
	require.Equal(t, http.StatusCreated, res[0].Status)
	require.Equal(t, http.StatusCreated, res[0].StartResponse.Status)
	require.NotEmpty(t, res[0].ExecutionID)
	require.Equal(t, "cb-wid", res[1].WorkflowID)
	require.Equal(t, http.StatusNotFound, res[2].Status, "%s", res[2].Raw)
	require.Equal(t, "unknown_workflow", res[2].Code)
	require.NotEmpty(t, res[2].Error)

	again, err := b.api.BatchStart(ctxT(t), items[:1])
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, again[0].Status)
	require.Equal(t, res[0].ExecutionID, again[0].ExecutionID)
	require.True(t, *again[0].Deduplicated)

	_, err = b.api.BatchStart(ctxT(t), nil)
	var apiErr *client.Error
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusBadRequest, apiErr.Status)
	_, err = b.api.BatchStart(ctxT(t), []client.BatchItem{{WorkflowName: "x", Input: func() {}}})
	require.Error(t, err, "an input that does not encode is refused before sending")

	atomic := []client.BatchItem{
		{WorkflowName: demo.NoopChainName, IdempotencyKey: "cb-atomic-1", Input: map[string]int{"activities": 0}},
		{WorkflowName: demo.NoopChainName, IdempotencyKey: "cb-atomic-2", Input: map[string]int{"activities": 0}},
	}
	res, err = b.api.BatchStartAtomic(ctxT(t), atomic)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res[0].Status)
	require.Equal(t, http.StatusCreated, res[1].Status)
	_, err = b.api.BatchStartAtomic(ctxT(t), append(atomic, client.BatchItem{WorkflowName: "no_such_workflow"}))
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusNotFound, apiErr.Status)
	require.EqualValues(t, 2, apiErr.Body["item"], "the failed item is named")
}

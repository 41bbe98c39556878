package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/client"
	"github.com/harvestd/harvest/internal/testworkflows"
)

// TestBatchJobClient terminates three runs with a batch job, created
// twice under one key, and reads its progress until it completes.
func TestBatchJobClient(t *testing.T) {
	t.Parallel()
	b := setupServer(t)
	ctx := context.Background()
	for range 3 {
		_, err := b.api.Start(ctx, testworkflows.Tally.Name(), client.StartRequest{})
		require.NoError(t, err)
	}
	req := client.BatchJobRequest{Operation: client.BatchTerminate, Filter: client.BatchFilter{WorkflowName: testworkflows.Tally.Name()},
		Rate: 100, IdempotencyKey: "clean-up"}
	first, err := b.api.CreateBatchJob(ctx, req)
	require.NoError(t, err)
	require.True(t, first.Created)
	again, err := b.api.CreateBatchJob(ctx, req)
	require.NoError(t, err)
	require.Equal(t, first.BatchID, again.BatchID)
	require.False(t, again.Created)
	var job *client.BatchJob
	require.Eventually(t, func() bool {
		job, err = b.api.BatchJob(ctx, first.BatchID)
		require.NoError(t, err)
		return job.State != "running"
	}, 30*time.Second, 20*time.Millisecond)
	require.Equal(t, "completed", job.State)
	require.Equal(t, client.BatchProgress{Matched: 3, Done: 3, Pages: 1, Finished: true}, job.Progress)
	require.NoError(t, b.api.CancelBatchJob(ctx, first.BatchID), "a finished job's cancel is answered")
	_, err = b.api.CreateBatchJob(ctx, client.BatchJobRequest{Operation: client.BatchTerminate})
	require.ErrorIs(t, err, client.ErrInvalid)
}

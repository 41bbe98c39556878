package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/internal/batchop"
)

// startBatch starts the batch job of key on e.
func startBatch(t testing.TB, e *Engine, key string, job batchop.Job) StartResult {
	t.Helper()
	return start(t, e, StartRequest{WorkflowName: batchop.WorkflowName, IdempotencyKey: key, Input: raw(t, job)})
}

// batchProgress waits for job id's chain to complete and returns its
// progress.
func batchResult(t testing.TB, e *Engine, id uuid.UUID) batchop.Progress {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := e.Result(ctx, id, 5*time.Minute)
	require.NoError(t, err)
	require.Equal(t, StateCompleted, out.State, "%+v", out)
	var p batchop.Progress
	require.NoError(t, json.Unmarshal(out.Output, &p))
	return p
}

// tallies starts n tally runs (each waits for its go signal).
func tallies(t testing.TB, e *Engine, n int) []uuid.UUID {
	t.Helper()
	ids := make([]uuid.UUID, n)
	for i := range ids {
		ids[i] = start(t, e, StartRequest{WorkflowName: tallyWF.Name(), WorkflowID: fmt.Sprint("t-", i), Input: raw(t, false)}).ExecutionID
	}
	return ids
}

// stateCounts counts the runs of workflow name by state.
func stateCounts(t testing.TB, b *testBundle, name string) map[string]int {
	t.Helper()
	rows, err := b.pool.Query(ctxT(t), `SELECT state, count(*) FROM harvest_executions WHERE workflow_name = $1 GROUP BY 1`, name)
	require.NoError(t, err)
	out := map[string]int{}
	for rows.Next() {
		var st string
		var n int
		require.NoError(t, rows.Scan(&st, &n))
		out[st] = n
	}
	require.NoError(t, rows.Err())
	return out
}

func TestBatch(t *testing.T) {
	t.Parallel()

	t.Run("TerminatesEveryMatchingRunOnce", func(t *testing.T) {
		t.Parallel()
		b, e := setupUpdates(t)
		tallies(t, e, 25)
		job := batchop.Job{Operation: batchop.Terminate, Filter: batchop.Filter{WorkflowName: tallyWF.Name(), States: []string{StateRunning}},
			Reason: "cleanup", Rate: 1000, Size: 10, Pages: 2} // three pages, a continue-as-new after two
		id := startBatch(t, e, "term", job).ExecutionID
		require.Equal(t, id, startBatch(t, e, "term", job).ExecutionID, "a retried creation finds the job")
		p := batchResult(t, e, id)
		require.Equal(t, batchop.Progress{Matched: 25, Done: 25, Pages: 3, Finished: true}, p)
		require.Equal(t, map[string]int{StateTerminated: 25}, stateCounts(t, b, tallyWF.Name()))
	})

	t.Run("SignalsEachRunOnceAndSkipsClosedOnes", func(t *testing.T) {
		t.Parallel()
		b, e := setupUpdates(t)
		ids := tallies(t, e, 6)
		_, err := e.Terminate(ctxT(t), ids[0], "gone")
		require.NoError(t, err)
		job := batchop.Job{Operation: batchop.Signal, Filter: batchop.Filter{WorkflowName: tallyWF.Name()},
			SignalName: goSignal.Name(), SignalPayload: raw(t, "batch"), Rate: 100}
		p := batchResult(t, e, startBatch(t, e, "sig", job).ExecutionID)
		require.Equal(t, batchop.Progress{Matched: 6, Done: 5, Skipped: 1, Pages: 1, Finished: true}, p)
		eventually(t, "the signalled runs completed", func() bool {
			return stateCounts(t, b, tallyWF.Name())[StateCompleted] == 5
		})
		for _, id := range ids[1:] {
			require.Equal(t, 1, countType(t, b, id, harvest.EventSignalReceived), "run %s signalled once", id)
		}
	})
}

package engine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/internal/batchop"
)

// batchBenchRuns is how many runs BenchmarkBatchTerminate terminates.
const batchBenchRuns = 10000

// BenchmarkBatchTerminate terminates 10,000 waiting runs with one batch
// job at each rate (issue 44's figure; docs/performance.md) and checks
// that each was terminated once. Run it with -benchtime 1x: every
// iteration is one job of 10,000.
func BenchmarkBatchTerminate(b *testing.B) {
	for _, rate := range []float64{1000, batchop.MaxPage * 50} {
		b.Run(fmt.Sprint("rate=", rate), func(b *testing.B) {
			for range b.N {
				benchBatchTerminate(b, rate)
			}
		})
	}
}

// benchBatchTerminate is one iteration: a fresh engine, 10,000 blocked
// runs, one job at rate; it reports runs/s from the job's start to its
// result.
func benchBatchTerminate(b *testing.B, rate float64) {
	b.StopTimer()
	e := benchEngine(b)
	startBlocked(b, e, batchBenchRuns)
	job := batchop.Job{Operation: batchop.Terminate, Filter: batchop.Filter{WorkflowName: blockWF.Name(), States: []string{StateRunning}},
		Reason: "bench", Rate: rate}
	b.StartTimer()
	t0 := time.Now()
	res := startBatch(b, e, fmt.Sprint("bench-", rate), job)
	p := batchResult(b, e, res.ExecutionID)
	took := time.Since(t0)
	b.StopTimer()
	require.Equal(b, batchop.Progress{Matched: batchBenchRuns, Done: batchBenchRuns, Pages: p.Pages, Finished: true}, p)
	var runs, terminations int
	require.NoError(b, e.pool.QueryRow(ctxT(b), `SELECT count(*) FILTER (WHERE state = 'TERMINATED'),
		(SELECT count(*) FROM harvest_events WHERE event_type = $2) FROM harvest_executions WHERE workflow_name = $1`,
		blockWF.Name(), string(harvest.EventWorkflowTerminated)).Scan(&runs, &terminations))
	require.Equal(b, batchBenchRuns, runs)
	require.Equal(b, batchBenchRuns, terminations, "each run terminated once")
	b.ReportMetric(float64(batchBenchRuns)/took.Seconds(), "runs/s")
	b.ReportMetric(rate, "rate")
}

// startBlocked starts n blocked runs from 16 callers.
func startBlocked(b *testing.B, e *Engine, n int) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				_, err := e.StartWorkflow(context.Background(), StartRequest{WorkflowName: blockWF.Name(), IdempotencyKey: fmt.Sprint("b", i)})
				require.NoError(b, err)
			}
		})
	}
	wg.Wait()
}

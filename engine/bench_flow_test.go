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
)

// benchLimitedWF is block under a concurrency limit the benchmarks never
// reach.
var benchLimitedWF = harvest.NewWorkflow("block_limited", func(ctx harvest.Context, _ string) (string, error) {
	return goSignal.Receive(ctx)
}).WithConcurrency(harvest.ConcurrencyLimit{MaxRunning: 1 << 30})

// limitedEngine is benchEngine with benchLimitedWF registered.
func limitedEngine(b *testing.B) *Engine {
	b.Helper()
	e := benchEngine(b)
	require.NoError(b, e.reg.Register(benchLimitedWF))
	return e
}

// notYetRunning counts the runs of name queued, or running with their
// first workflow task still due.
func notYetRunning(b *testing.B, e *Engine, name string) int {
	var n int
	require.NoError(b, e.pool.QueryRow(context.Background(), `
		SELECT count(*) FROM harvest_executions
		 WHERE workflow_name = $1 AND (state = 'QUEUED' OR wf_task_due_at IS NOT NULL)`, name).Scan(&n))
	return n
}

// waitRunning polls until every run of name has run its first task.
func waitRunning(b *testing.B, e *Engine, name string) {
	deadline := time.Now().Add(time.Minute)
	for notYetRunning(b, e, name) > 0 {
		if time.Now().After(deadline) {
			b.Fatal("queued runs never all ran")
		}
		time.Sleep(time.Millisecond)
	}
}

// BenchmarkStartLimited is BenchmarkStartKeyed for a workflow under a
// limit it never reaches: each start takes a free slot in its own batch
// (the key's lock, the read of its use, the flow columns) and runs its
// first task there; the timer runs until every run's first task ran (none
// should be left to the dispatcher).
func BenchmarkStartLimited(b *testing.B) {
	e := limitedEngine(b)
	startsInParallel(b, e, func(i int64) StartRequest {
		return StartRequest{WorkflowName: benchLimitedWF.Name(), IdempotencyKey: fmt.Sprint("k", i)}
	})
	waitRunning(b, e, benchLimitedWF.Name())
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "starts/s")
	reportTrips(b, e)
}

// BenchmarkStartLimitedPerKey is BenchmarkStartLimited with a key per
// start (concurrency_key: one customer each), the common case of a
// per-customer limit: each batch counts no run, where
// BenchmarkStartLimited counts every run of the workflow (its limit is on
// the name alone, and its runs never close).
func BenchmarkStartLimitedPerKey(b *testing.B) {
	e := limitedEngine(b)
	startsInParallel(b, e, func(i int64) StartRequest {
		return StartRequest{WorkflowName: benchLimitedWF.Name(), IdempotencyKey: fmt.Sprint("k", i), ConcurrencyKey: fmt.Sprint("c", i)}
	})
	waitRunning(b, e, benchLimitedWF.Name())
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "starts/s")
	reportTrips(b, e)
}

// benchLimitedNoopWF is noop under a limit on its name that the
// benchmarks never reach: each run closes in its first task, which runs
// in its start's batch, so the key holds none for long.
var benchLimitedNoopWF = harvest.NewWorkflow("noop_limited", func(_ harvest.Context, in string) (string, error) {
	return in, nil
}).WithConcurrency(harvest.ConcurrencyLimit{MaxRunning: 1000})

// BenchmarkStartNoopKeyed is BenchmarkStartKeyed for runs that close in
// their first task (noop), the pair of BenchmarkStartNoopLimited.
func BenchmarkStartNoopKeyed(b *testing.B) {
	e := benchEngine(b)
	require.NoError(b, e.reg.Register(noopWF))
	startsInParallel(b, e, func(i int64) StartRequest {
		return StartRequest{WorkflowName: noopWF.Name(), IdempotencyKey: fmt.Sprint("k", i)}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "starts/s")
}

// BenchmarkStartNoopLimited is BenchmarkStartNoopKeyed under a limit on
// the workflow's name (one key, 1,000 slots) that is never reached: each
// batch locks the key, reads its use (the runs still running: about none)
// and takes its slots.
func BenchmarkStartNoopLimited(b *testing.B) {
	e := limitedEngine(b)
	require.NoError(b, e.reg.Register(benchLimitedNoopWF))
	startsInParallel(b, e, func(i int64) StartRequest {
		return StartRequest{WorkflowName: benchLimitedNoopWF.Name(), IdempotencyKey: fmt.Sprint("k", i)}
	})
	waitRunning(b, e, benchLimitedNoopWF.Name())
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "starts/s")
	reportTrips(b, e)
}

// reportTrips reports how the engine's start batches went: in one trip,
// in two, and one-trip batches that missed (and were redone in two).
func reportTrips(b *testing.B, e *Engine) {
	tr := trips(e)
	b.ReportMetric(float64(tr[0]), "one-trip")
	b.ReportMetric(float64(tr[1]), "two-trip")
	b.ReportMetric(float64(tr[2]), "missed")
}

// BenchmarkDispatch: b.N queued runs become due at once (their start_at,
// an hour away when they were started, is moved to now); the timer runs
// until the dispatcher made them all RUNNING and their first tasks ran.
func BenchmarkDispatch(b *testing.B) {
	e := limitedEngine(b)
	at := time.Now().Add(time.Hour)
	var (
		n  atomic.Int64
		wg sync.WaitGroup
	)
	for range 32 {
		wg.Go(func() {
			for i := n.Add(1); i <= int64(b.N); i = n.Add(1) {
				_, err := e.StartWorkflow(context.Background(), StartRequest{WorkflowName: benchLimitedWF.Name(), StartAt: &at,
					IdempotencyKey: fmt.Sprint("d", i)})
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ResetTimer()
	_, err := e.pool.Exec(context.Background(), `UPDATE harvest_executions SET start_at = now() WHERE state = 'QUEUED'`)
	require.NoError(b, err)
	e.flow.Queued()
	waitRunning(b, e, benchLimitedWF.Name())
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "runs/s")
}

// benchClusterWF is block under a limit counted across the cluster that
// the benchmark never reaches: one key, so one keeper grants every run.
var benchClusterWF = harvest.NewWorkflow("block_cluster", func(ctx harvest.Context, _ string) (string, error) {
	return goSignal.Receive(ctx)
}).WithConcurrency(harvest.ConcurrencyLimit{MaxRunning: 1 << 30, Scope: harvest.ScopeCluster})

// BenchmarkDispatchCluster is BenchmarkDispatch for a limit counted
// across the cluster: b.N runs made due at once, timed until every one
// is RUNNING with its first task run — each asked of the key's keeper
// (an outbox row, a keyed signal, a keeper task) and granted by it (an
// external signal whose transaction makes the run RUNNING).
func BenchmarkDispatchCluster(b *testing.B) {
	e := benchEngine(b)
	require.NoError(b, e.reg.Register(benchClusterWF))
	at := time.Now().Add(time.Hour)
	for i := range b.N {
		_, err := e.StartWorkflow(context.Background(), StartRequest{WorkflowName: benchClusterWF.Name(), StartAt: &at,
			IdempotencyKey: fmt.Sprint("d", i)})
		require.NoError(b, err)
	}
	b.ResetTimer()
	_, err := e.pool.Exec(context.Background(), `UPDATE harvest_executions SET start_at = now() WHERE state = 'QUEUED'`)
	require.NoError(b, err)
	e.flow.Queued()
	waitRunning(b, e, benchClusterWF.Name())
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "runs/s")
}

// BenchmarkActivityRateLimit measures how close an activity limited to
// 50 calls a second (burst 5) comes to its rate: ten runs call it 60
// times each, one call after another, and each round counts the calls
// begun in the 10 s after the first burst (the bar: 450–550).
func BenchmarkActivityRateLimit(b *testing.B) {
	for range b.N {
		starts := &startTimes{}
		_, e := setupPaced(b, harvest.RateLimit{PerSecond: 50, Burst: 5}, starts)
		for range 10 {
			start(b, e, StartRequest{WorkflowName: "pace", Input: raw(b, 60)})
		}
		waitStarts(b, starts, 5+500+1, time.Minute)
		b.ReportMetric(float64(starts.within(starts.first(5), 10*time.Second)), "calls/10s")
	}
}

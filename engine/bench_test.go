package engine

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/internal/pgtest"
)

// benchEngine starts an engine with workers sized for a load test.
func benchEngine(b *testing.B) *Engine {
	b.Helper()
	pool := pgtest.NewPool(b)
	reg := harvest.NewRegistry()
	noop := harvest.NewActivity("noop", func(*harvest.ActivityContext, string) (string, error) { return "ok", nil })
	require.NoError(b, reg.Register(blockWF, noop,
		harvest.NewWorkflow("one_activity", func(ctx harvest.Context, in string) (string, error) {
			return noop.Execute(ctx, in).Get(ctx)
		})))
	e, err := New(pool, reg, Config{ShardID: 1, NodeID: "bench", PollInterval: 20 * time.Millisecond, Logger: zerolog.Nop(),
		WorkflowWorkers: 8, ActivityWorkers: 32})
	require.NoError(b, err)
	require.NoError(b, e.Start(context.Background()))
	b.Cleanup(e.Stop)
	return e
}

// BenchmarkStartKeyed: fresh keyed starts from 32 concurrent callers.
func BenchmarkStartKeyed(b *testing.B) {
	e := benchEngine(b)
	startsInParallel(b, e, func(i int64) StartRequest {
		return StartRequest{WorkflowName: "block", IdempotencyKey: fmt.Sprint("k", i)}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "starts/s")
}

// BenchmarkDedupHit: replays of committed keys (the read-only fast path).
func BenchmarkDedupHit(b *testing.B) {
	e := benchEngine(b)
	const keys = 256
	for i := range keys {
		_, err := e.StartWorkflow(context.Background(), StartRequest{WorkflowName: "block", IdempotencyKey: fmt.Sprint("k", i)})
		require.NoError(b, err)
	}
	var n atomic.Int64
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			res, err := e.StartWorkflow(context.Background(), StartRequest{WorkflowName: "block", IdempotencyKey: fmt.Sprint("k", n.Add(1)%keys)})
			if err != nil || !res.Deduplicated {
				b.Errorf("want a dedup hit: %v %+v", err, res)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "hits/s")
}

// BenchmarkSignalKeyed: keyed signals spread over 64 running runs.
func BenchmarkSignalKeyed(b *testing.B) {
	e := benchEngine(b)
	benchSignals(b, e, e.Signal)
}

// benchSignals sends keyed signals spread over 64 running runs of e,
// from 32 concurrent callers, through send.
func benchSignals(b *testing.B, e *Engine, send func(context.Context, SignalRequest) (SignalResult, error)) {
	var runs []uuid.UUID
	for range 64 {
		r, err := e.StartWorkflow(context.Background(), StartRequest{WorkflowName: "block"})
		require.NoError(b, err)
		runs = append(runs, r.ExecutionID)
	}
	var n atomic.Int64
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			_, err := send(context.Background(), SignalRequest{ExecutionID: runs[i%64], SignalName: "noise", IdempotencyKey: fmt.Sprint("s", i)})
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "signals/s")
}

// BenchmarkOneActivityWorkflow: start to completion of workflows with one
// no-op activity.
func BenchmarkOneActivityWorkflow(b *testing.B) {
	e := benchEngine(b)
	ids := make(chan uuid.UUID, b.N)
	b.ResetTimer()
	for range b.N {
		r, err := e.StartWorkflow(context.Background(), StartRequest{WorkflowName: "one_activity"})
		require.NoError(b, err)
		ids <- r.ExecutionID
	}
	close(ids)
	for id := range ids {
		x, err := e.Result(context.Background(), id, time.Minute)
		require.NoError(b, err)
		require.Equal(b, StateCompleted, x.State)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "workflows/s")
}

// BenchmarkSignalSingle: keyed signals spread over 64 running runs through
// the single path (a transaction each, as when a signal batch fails).
func BenchmarkSignalSingle(b *testing.B) {
	e := benchEngine(b)
	benchSignals(b, e, e.signalTx)
}

// BenchmarkTerminate: terminations of running runs (a close through the
// single path: its event, the close, and what a close clears).
func BenchmarkTerminate(b *testing.B) {
	e := benchEngine(b)
	ids := make([]uuid.UUID, b.N)
	for i := range ids {
		r, err := e.StartWorkflow(context.Background(), StartRequest{WorkflowName: "block"})
		require.NoError(b, err)
		ids[i] = r.ExecutionID
	}
	var n atomic.Int64
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			res, err := e.Terminate(context.Background(), ids[n.Add(1)-1], "bench")
			if err != nil || !res.Newly {
				b.Errorf("want a termination: %v %+v", err, res)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "closes/s")
}

// startsInParallel runs b.N starts from 16 goroutines per core, the i-th
// (from 1) req(i), after resetting the timer.
func startsInParallel(b *testing.B, e *Engine, req func(i int64) StartRequest) {
	var n atomic.Int64
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := e.StartWorkflow(context.Background(), req(n.Add(1))); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

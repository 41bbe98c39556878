package engine

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/engine/internal/loop"
)

// batchRun is one forced batch: its requests, the batch's replies and
// each request's final outcome (after the single path, where sent there).
type batchRun struct {
	replies []startReply
	res     []StartResult
	errs    []error
}

// prepare runs the fresh checks of a start and mints its workflow id, as
// startWorkflow does before it hands the start to the batcher.
func prepare(t *testing.T, e *Engine, reqs ...StartRequest) []StartRequest {
	t.Helper()
	for i := range reqs {
		require.NoError(t, e.freshChecks(context.Background(), &reqs[i]))
		if reqs[i].WorkflowID == "" {
			reqs[i].WorkflowID = uuid.NewString()
		}
	}
	return reqs
}

// runBatch runs the starts as ONE batch, bypassing the batcher's queue,
// then settles each reply like groupStart does.
func runBatch(t *testing.T, e *Engine, reqs ...StartRequest) batchRun {
	t.Helper()
	reqs = prepare(t, e, reqs...)
	r := batchRun{replies: e.startBatch(ctxT(t), reqs), res: make([]StartResult, len(reqs)), errs: make([]error, len(reqs))}
	require.Len(t, r.replies, len(reqs))
	for i := range reqs {
		r.res[i], r.errs[i] = e.fromReply(ctxT(t), reqs[i], r.replies[i])
	}
	return r
}

// gcSetup is a bundle and an engine whose batcher is off, so that a test
// drives batches itself.
func gcSetup(t *testing.T, mutate ...func(*Config)) (*testBundle, *Engine) {
	t.Helper()
	b := setup(t)
	return b, b.engine(t, append(mutate, func(c *Config) { c.StartBatchMax = 1 })...)
}

func countRows(t *testing.T, b *testBundle, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}

func TestGroupCommit(t *testing.T) {
	t.Parallel()

	t.Run("MixedBatchAnswersEachRequest", func(t *testing.T) {
		t.Parallel()
		b, e := gcSetup(t)
		old := start(t, e, StartRequest{WorkflowName: "block", IdempotencyKey: "old"})
		req := func(key string) StartRequest {
			return StartRequest{WorkflowName: "block", IdempotencyKey: key, Input: raw(t, key)}
		}
		r := runBatch(t, e, req("a"), req("b"), req("a"), req("old"), req(""), req("a"), req("old"), req("b"),
			StartRequest{WorkflowName: "collect", IdempotencyKey: "a"})
		for i, rep := range r.replies {
			require.False(t, rep.Single, "request %d went to the single path", i)
			require.NoError(t, r.errs[i], "request %d", i)
		}
		fresh := func(i int) {
			require.True(t, r.res[i].StartedFresh, "request %d", i)
			require.False(t, r.res[i].Deduplicated, "request %d", i)
			require.Equal(t, StateRunning, r.res[i].State)
			require.Equal(t, uint16(7), ShardOf(r.res[i].ExecutionID))
		}
		dupOf := func(i int, id uuid.UUID) {
			require.True(t, r.res[i].Deduplicated, "request %d", i)
			require.False(t, r.res[i].StartedFresh, "request %d", i)
			require.Equal(t, id, r.res[i].ExecutionID, "request %d", i)
		}
		fresh(0)
		fresh(1)
		fresh(4)
		fresh(8) // same key, other workflow name: another scope
		dupOf(2, r.res[0].ExecutionID)
		dupOf(5, r.res[0].ExecutionID)
		dupOf(7, r.res[1].ExecutionID)
		dupOf(3, old.ExecutionID)
		dupOf(6, old.ExecutionID)
		require.Equal(t, old.WorkflowID, r.res[3].WorkflowID)
		require.Equal(t, r.res[0].WorkflowID, r.res[2].WorkflowID)
		require.NotEqual(t, r.res[0].ExecutionID, r.res[8].ExecutionID)

		require.Equal(t, 5, countRows(t, b, `SELECT count(*) FROM harvest_executions`))
		require.Equal(t, 0, countRows(t, b, `
			SELECT count(*) FROM harvest_executions x
			 WHERE (SELECT count(*) FROM harvest_events v WHERE v.execution_id = x.execution_id AND v.event_id = 0
			           AND v.event_type = 'WorkflowStarted') <> 1`), "every run has exactly one WorkflowStarted event")
		for i, key := range map[int]string{0: "a", 1: "b", 3: "old"} {
			got, ok, err := e.LookupStartKey(context.Background(), "block", key)
			require.NoError(t, err)
			require.True(t, ok, key)
			require.Equal(t, r.res[i].ExecutionID, got.ExecutionID, key)
		}
		x, err := e.GetExecution(context.Background(), r.res[1].ExecutionID)
		require.NoError(t, err)
		require.JSONEq(t, `"b"`, string(x.Input))
		require.Equal(t, "b", x.IdempotencyKey)
	})

	t.Run("HolderWithRejectDuplicateGetsConflict", func(t *testing.T) {
		t.Parallel()
		b, e := gcSetup(t)
		prior := start(t, e, StartRequest{WorkflowName: "block", WorkflowID: "order-1"})
		r := runBatch(t, e,
			StartRequest{WorkflowName: "block", IdempotencyKey: "k1"},
			StartRequest{WorkflowName: "block", WorkflowID: "order-1", IdempotencyKey: "k-rej", ReusePolicy: ReuseRejectDuplicate},
			StartRequest{WorkflowName: "block", WorkflowID: "order-2"},
			StartRequest{WorkflowName: "block", IdempotencyKey: "k-rej"}, // repeats the rejected one's key
		)
		require.True(t, r.replies[1].Single, "a held workflow id takes the single path")
		var conflict *ConflictError
		require.ErrorAs(t, r.errs[1], &conflict)
		require.Equal(t, prior.ExecutionID.String(), conflict.ExistingExecutionID)
		require.Equal(t, StateRunning, conflict.ExistingState)
		for _, i := range []int{0, 2} {
			require.NoError(t, r.errs[i])
			require.True(t, r.res[i].StartedFresh, "request %d", i)
		}
		// The repeat of the rejected key runs alone after it, like a retry would.
		require.NoError(t, r.errs[3])
		require.True(t, r.res[3].StartedFresh)
		require.Equal(t, 1, countRows(t, b, `SELECT count(*) FROM harvest_executions WHERE workflow_id = 'order-1'`))
		got, ok, err := e.LookupStartKey(context.Background(), "block", "k-rej")
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, r.res[3].ExecutionID, got.ExecutionID, "the rejected start's claim was dropped")
	})

	t.Run("RepeatedWorkflowIDRunsAloneAfterTheBatch", func(t *testing.T) {
		t.Parallel()
		b, e := gcSetup(t)
		r := runBatch(t, e,
			StartRequest{WorkflowName: "block", WorkflowID: "w", IdempotencyKey: "x"},
			StartRequest{WorkflowName: "block", WorkflowID: "w", IdempotencyKey: "y"},
		)
		require.False(t, r.replies[0].Single)
		require.True(t, r.replies[1].Single)
		require.NoError(t, r.errs[0])
		require.NoError(t, r.errs[1])
		require.True(t, r.res[0].StartedFresh)
		require.False(t, r.res[1].StartedFresh, "allow_duplicate attaches to the running run")
		require.Equal(t, r.res[0].ExecutionID, r.res[1].ExecutionID)
		require.Equal(t, 1, countRows(t, b, `SELECT count(*) FROM harvest_executions`))
		got, ok, err := e.LookupStartKey(context.Background(), "block", "y")
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, r.res[0].ExecutionID, got.ExecutionID)
	})

	t.Run("ExpiredClaimIsTakenOver", func(t *testing.T) {
		t.Parallel()
		b, e := gcSetup(t)
		first := start(t, e, StartRequest{WorkflowName: "block", IdempotencyKey: "k"})
		_, err := b.pool.Exec(context.Background(), `UPDATE harvest_start_idempotency SET created_at = now() - interval '25 hours'`)
		require.NoError(t, err)
		r := runBatch(t, e, StartRequest{WorkflowName: "block", IdempotencyKey: "k"}, StartRequest{WorkflowName: "block", IdempotencyKey: "k"})
		require.NoError(t, r.errs[0])
		require.True(t, r.res[0].StartedFresh)
		require.NotEqual(t, first.ExecutionID, r.res[0].ExecutionID)
		require.True(t, r.res[1].Deduplicated)
		require.Equal(t, r.res[0].ExecutionID, r.res[1].ExecutionID)
	})

	t.Run("CallbacksAndDelayAreStored", func(t *testing.T) {
		t.Parallel()
		b, e := gcSetup(t, func(c *Config) {
			c.CallbackPolicy = CallbackPolicy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
		})
		delay := time.Hour
		r := runBatch(t, e, StartRequest{WorkflowName: "block", Delay: &delay, Memo: raw(t, map[string]int{"m": 1}),
			Callbacks: []Callback{{URL: "http://127.0.0.1:1/a", Headers: map[string]string{"X": "y"}}, {URL: "http://127.0.0.1:1/b"}}})
		require.NoError(t, r.errs[0])
		id := r.res[0].ExecutionID
		require.Equal(t, 2, countRows(t, b, `SELECT count(*) FROM harvest_callbacks WHERE execution_id = $1`, id))
		require.Equal(t, 1, countRows(t, b, `SELECT count(*) FROM harvest_callbacks WHERE execution_id = $1 AND idx = 0 AND headers = '{"X":"y"}'`, id))
		require.Equal(t, 1, countRows(t, b, `
			SELECT count(*) FROM harvest_executions WHERE execution_id = $1 AND memo = '{"m":1}'
			   AND input = 'null' AND wf_task_due_at > now() + interval '50 minutes' AND start_at IS NOT NULL`, id))
	})

	t.Run("BatchFailingAsAWholeFallsBackToSinglePath", func(t *testing.T) {
		t.Parallel()
		b, e := gcSetup(t)
		// An uncommitted run of workflow id "race" the batch cannot see:
		// its insert waits for it, then hits the slot's unique index.
		tx, err := b.pool.Begin(context.Background())
		require.NoError(t, err)
		defer func() { _ = tx.Rollback(context.Background()) }()
		racer := NewExecutionID(7)
		_, err = tx.Exec(context.Background(), `INSERT INTO harvest_executions (execution_id, workflow_name, workflow_id, state)
			VALUES ($1, 'block', 'race', 'RUNNING')`, racer)
		require.NoError(t, err)
		// In two trips: one trip would take the refusal as a held slot
		// and go again in two (TestOneTripBatch/ARacingSlotMisses).
		e.in.OneTripPaused.Store(oneTripPause)
		done := make(chan batchRun, 1)
		go func() {
			reqs := prepare(t, e, StartRequest{WorkflowName: "block", IdempotencyKey: "r1"},
				StartRequest{WorkflowName: "block", WorkflowID: "race", IdempotencyKey: "r2"})
			r := batchRun{replies: e.startBatch(context.Background(), reqs), res: make([]StartResult, 2), errs: make([]error, 2)}
			for i := range reqs {
				r.res[i], r.errs[i] = e.fromReply(context.Background(), reqs[i], r.replies[i])
			}
			done <- r
		}()
		eventually(t, "the batch to wait for the racing insert", func() bool {
			return countRows(t, b, `SELECT count(*) FROM pg_stat_activity
				WHERE datname = current_database() AND wait_event_type = 'Lock'`) > 0
		})
		require.NoError(t, tx.Commit(context.Background()))
		var r batchRun
		select {
		case r = <-done:
		case <-ctxT(t).Done():
			t.Fatal("batch did not finish")
		}
		require.True(t, r.replies[0].Single)
		require.True(t, r.replies[1].Single)
		require.NoError(t, r.errs[0])
		require.True(t, r.res[0].StartedFresh)
		require.NoError(t, r.errs[1])
		require.False(t, r.res[1].StartedFresh, "attached to the racing run")
		require.Equal(t, racer, r.res[1].ExecutionID)
		require.Equal(t, 2, countRows(t, b, `SELECT count(*) FROM harvest_executions`))
		require.Equal(t, 2, countRows(t, b, `SELECT count(*) FROM harvest_start_idempotency`))
	})

	t.Run("LostLeaseFailsEveryRequest", func(t *testing.T) {
		t.Parallel()
		b, e := gcSetup(t)
		_, err := b.pool.Exec(context.Background(), `UPDATE harvest_shard_lease SET epoch = epoch + 1, owner_node = 'node-b'`)
		require.NoError(t, err)
		r := runBatch(t, e, StartRequest{WorkflowName: "block", IdempotencyKey: "a"}, StartRequest{WorkflowName: "block"})
		// The fence, or a loop that fenced first, finds the lease gone.
		for i := range r.replies {
			require.False(t, r.replies[i].Single, "request %d is not retried", i)
			var lost *OwnershipLostError
			if !errors.As(r.errs[i], &lost) {
				require.ErrorIs(t, r.errs[i], ErrNotRunning, "request %d", i)
			}
		}
		require.Equal(t, 0, countRows(t, b, `SELECT count(*) FROM harvest_start_idempotency`))
		require.False(t, e.Owning())
	})

	t.Run("CallerCancelledBeforeTheBatchTakesItGetsCtxErr", func(t *testing.T) {
		t.Parallel()
		b, e := gcSetup(t)
		stalled := loop.NewBatcher[*startCall](8) // never run: nothing takes a start
		e.in.Starts.Store(stalled)
		ctx, cancel := context.WithCancel(context.Background())
		checked := make(chan struct{})
		errc := make(chan error, 1)
		go func() {
			_, err := e.StartWorkflow(ctx, StartRequest{WorkflowName: "block", IdempotencyKey: "c",
				FreshChecks: func(context.Context) error { close(checked); return nil }})
			errc <- err
		}()
		<-checked // past the probe and the checks: it queues for the batcher next
		cancel()
		require.ErrorIs(t, <-errc, context.Canceled)
		// A stopped batcher hands its callers to the single path.
		stalled.Run(ctx, 1, func([]*startCall) { t.Error("a stopped batcher took a start") }) // ctx ended: it returns at once
		res := start(t, e, StartRequest{WorkflowName: "block", IdempotencyKey: "c"})
		require.True(t, res.StartedFresh)
		require.Equal(t, 1, countRows(t, b, `SELECT count(*) FROM harvest_executions`))
	})

	t.Run("ConcurrentStartsThroughTheBatcher", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := b.engine(t)
		require.NotNil(t, e.in.Starts.Load(), "group commit is on by default")
		const n, keys = 96, 24
		results := make([]StartResult, n)
		errs := make([]error, n)
		gate := make(chan struct{})
		done := make(chan struct{}, n)
		for i := range n {
			go func() {
				defer func() { done <- struct{}{} }()
				<-gate
				results[i], errs[i] = e.StartWorkflow(context.Background(), StartRequest{
					WorkflowName: "block", IdempotencyKey: string(rune('A' + i%keys))})
			}()
		}
		close(gate)
		for range n {
			<-done
		}
		byKey := map[int]uuid.UUID{}
		fresh := 0
		for i := range n {
			require.NoError(t, errs[i])
			if id, ok := byKey[i%keys]; ok {
				require.Equal(t, id, results[i].ExecutionID)
			}
			byKey[i%keys] = results[i].ExecutionID
			if results[i].StartedFresh {
				fresh++
			} else {
				require.True(t, results[i].Deduplicated)
			}
		}
		require.Equal(t, keys, fresh)
		require.Equal(t, keys, countRows(t, b, `SELECT count(*) FROM harvest_executions`))
		require.Equal(t, keys, countRows(t, b, `SELECT count(*) FROM harvest_events WHERE event_type = 'WorkflowStarted'`))
	})
}

func TestStartBatchMaxValidation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		max  int
		ok   bool
	}{{"ZeroTakesTheDefault", 0, true}, {"OneTurnsItOff", 1, true}, {"Limit", StartBatchMaxLimit, true},
		{"Negative", -1, false}, {"AboveLimit", StartBatchMaxLimit + 1, false}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig("n")
			cfg.StartBatchMax = tc.max
			err := cfg.Validate()
			if !tc.ok {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			if tc.max == 0 {
				require.Equal(t, StartBatchMaxDefault, cfg.withDefaults().StartBatchMax)
			}
		})
	}
}

// BenchmarkGroupCommit: fresh keyed starts from 32 concurrent callers, each
// delayed by an hour so that no workflow task competes with the starts,
// committed alone (single) or in shared transactions (group).
func BenchmarkGroupCommit(b *testing.B) {
	for _, bc := range []struct {
		name string
		off  bool
	}{{"single", true}, {"group", false}} {
		b.Run(bc.name, func(b *testing.B) {
			e := benchEngine(b)
			if bc.off {
				e.in.Starts.Store(nil)
			}
			delay := time.Hour
			var n atomic.Int64
			b.SetParallelism(16)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					_, err := e.StartWorkflow(context.Background(), StartRequest{WorkflowName: "block",
						IdempotencyKey: fmt.Sprint("k", n.Add(1)), Delay: &delay})
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "starts/s")
		})
	}
}

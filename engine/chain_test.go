package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/demo"
	"github.com/harvestd/harvest/engine/internal/loop"
)

// startCounter starts a demo counter chain that continues every `every`
// signals and completes after `until`.
func startCounter(t *testing.T, e *Engine, every, until int, mutate ...func(*StartRequest)) StartResult {
	t.Helper()
	req := StartRequest{WorkflowName: demo.CounterName, WorkflowID: "counter-" + uuid.NewString(),
		Input: raw(t, demo.CounterInput{Every: every, Until: until})}
	for _, m := range mutate {
		m(&req)
	}
	return start(t, e, req)
}

// add is a keyed "add" signal of the counter.
func add(id uuid.UUID, sigID, key string) SignalRequest {
	return SignalRequest{ExecutionID: id, SignalName: demo.CounterAddSignal,
		Payload: json.RawMessage(fmt.Sprintf(`{"id":%q,"n":1}`, sigID)), IdempotencyKey: key}
}

// chainRuns follows a chain from its first run to its current one.
func chainRuns(t *testing.T, e *Engine, first uuid.UUID) []Execution {
	t.Helper()
	var runs []Execution
	for id := &first; id != nil; {
		x, err := e.GetExecution(ctxT(t), *id)
		require.NoError(t, err)
		runs = append(runs, x)
		id = x.ContinuedTo
	}
	return runs
}

// waitLinks waits until the chain has n runs and returns them.
func waitLinks(t *testing.T, e *Engine, first uuid.UUID, n int) []Execution {
	t.Helper()
	var runs []Execution
	eventually(t, fmt.Sprintf("a chain of %d runs", n), func() bool {
		runs = chainRuns(t, e, first)
		return len(runs) >= n
	})
	require.Len(t, runs, n)
	return runs
}

func signal(t *testing.T, e *Engine, req SignalRequest) SignalResult {
	t.Helper()
	res, err := e.Signal(ctxT(t), req)
	require.NoError(t, err)
	return res
}

func TestContinueAsNew(t *testing.T) {
	t.Parallel()

	t.Run("OneRunPerLinkWithTheSlotAndOwnActivityKeys", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := b.engine(t)
		run := startCounter(t, e, 2, 5)
		for i := range 5 {
			signal(t, e, add(run.ExecutionID, fmt.Sprint("s", i), fmt.Sprint("k", i))) // always the first run's id
		}
		o, err := e.Result(ctxT(t), run.ExecutionID, 20*time.Second)
		require.NoError(t, err)
		require.Equal(t, StateCompleted, o.State)
		var out demo.CounterResult
		require.NoError(t, json.Unmarshal(o.Output, &out))
		require.Equal(t, demo.CounterResult{Count: 5, Sum: 5, IDs: []string{"s0", "s1", "s2", "s3", "s4"}, Runs: 3}, out)

		runs := chainRuns(t, e, run.ExecutionID)
		require.Len(t, runs, 3)
		require.Equal(t, runs[2].ExecutionID, o.ExecutionID, "the result is the chain's last run's")
		keys := map[string]bool{}
		for i, x := range runs {
			require.Equal(t, run.ExecutionID, x.ChainID)
			require.Equal(t, run.WorkflowID, x.WorkflowID)
			require.Equal(t, ShardOf(run.ExecutionID), ShardOf(x.ExecutionID), "same shard")
			if i < 2 {
				require.Equal(t, StateContinuedAsNew, x.State)
				require.Equal(t, runs[i+1].ExecutionID, *x.ContinuedTo)
			}
			if i > 0 {
				require.Equal(t, runs[i-1].ExecutionID, *x.ContinuedFrom)
			}
			types := eventTypes(t, b.pool, x.ExecutionID)
			require.Equal(t, 1, count(types, harvest.EventWorkflowStarted))
			require.True(t, harvest.EventType(types[len(types)-1]).IsTerminal())
			var key string
			require.NoError(t, b.pool.QueryRow(ctxT(t), `
				SELECT data->>'idempotency_key' FROM harvest_events
				 WHERE execution_id = $1 AND event_type = 'ActivityScheduled'`, x.ExecutionID).Scan(&key))
			keys[key] = true
		}
		require.Len(t, keys, 3, "every run's activity has a key of its own")
		var holders []uuid.UUID
		rows, err := b.pool.Query(ctxT(t), `SELECT execution_id FROM harvest_executions WHERE workflow_id = $1 AND holds_slot`, run.WorkflowID)
		require.NoError(t, err)
		for rows.Next() {
			var id uuid.UUID
			require.NoError(t, rows.Scan(&id))
			holders = append(holders, id)
		}
		require.NoError(t, rows.Err())
		require.Equal(t, []uuid.UUID{runs[2].ExecutionID}, holders, "the slot moved to the last run")
		// A continued run's history still replays (queries, ReplayHistory).
		got, err := e.Query(ctxT(t), runs[0].ExecutionID, demo.CounterQuery, nil)
		require.NoError(t, err)
		require.JSONEq(t, `2`, string(got), "the first run's count when it continued")
		h, err := e.History(ctxT(t), runs[1].ExecutionID, HistoryQuery{After: -1, Limit: HistoryPageMax})
		require.NoError(t, err)
		require.NoError(t, harvest.ReplayHistory(b.reg, "", h.Events))
	})

	t.Run("ResultOfAnyRunWaitsForTheChainsEnd", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := b.engine(t)
		run := startCounter(t, e, 1, 3)
		got := make(chan Outcome, 1)
		go func() {
			o, _ := e.Result(context.Background(), run.ExecutionID, 20*time.Second)
			got <- o
		}()
		signal(t, e, add(run.ExecutionID, "a", "ka"))
		runs := waitLinks(t, e, run.ExecutionID, 2)
		o, err := e.Result(ctxT(t), run.ExecutionID, 0)
		require.NoError(t, err)
		require.Equal(t, StateRunning, o.State, "a continued run is no end")
		require.Equal(t, runs[1].ExecutionID, o.ExecutionID)
		signal(t, e, add(run.ExecutionID, "b", "kb"))
		signal(t, e, add(runs[1].ExecutionID, "c", "kc"))
		select {
		case o := <-got:
			require.Equal(t, StateCompleted, o.State)
			require.Equal(t, chainRuns(t, e, run.ExecutionID)[2].ExecutionID, o.ExecutionID)
		case <-time.After(20 * time.Second):
			t.Fatal("the waiting result did not follow the chain")
		}
	})

	t.Run("KeyedStartReplayAnswersTheFirstRunAndTheLatest", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := b.engine(t)
		run := startCounter(t, e, 1, 5, func(r *StartRequest) { r.IdempotencyKey = "start-1" })
		signal(t, e, add(run.ExecutionID, "a", "ka"))
		runs := waitLinks(t, e, run.ExecutionID, 2)
		for _, probed := range []bool{false, true} {
			again := start(t, e, StartRequest{WorkflowName: demo.CounterName, IdempotencyKey: "start-1", Probed: probed,
				Input: raw(t, demo.CounterInput{Until: 5})})
			require.True(t, again.Deduplicated)
			require.Equal(t, run.ExecutionID, again.ExecutionID, "the first run")
			require.Equal(t, StateContinuedAsNew, again.State, "with its own state")
			require.Equal(t, runs[1].ExecutionID, again.LatestExecutionID)
			require.Equal(t, StateRunning, again.LatestState)
		}
		res, ok, err := e.LookupStartKey(ctxT(t), demo.CounterName, "start-1")
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, runs[1].ExecutionID, res.LatestExecutionID)
	})

	t.Run("CancelAndTerminateOfAnOldRunReachTheCurrentOne", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := b.engine(t)
		run := startCounter(t, e, 1, 5)
		signal(t, e, add(run.ExecutionID, "a", "ka"))
		runs := waitLinks(t, e, run.ExecutionID, 2)
		c, err := e.Cancel(ctxT(t), run.ExecutionID, "stop")
		require.NoError(t, err)
		require.Equal(t, runs[1].ExecutionID, c.ExecutionID)
		require.True(t, c.Newly)
		x := waitClosed(t, e, runs[1].ExecutionID)
		require.Equal(t, StateCancelled, x.State)

		other := startCounter(t, e, 1, 5)
		signal(t, e, add(other.ExecutionID, "a", "ka"))
		links := waitLinks(t, e, other.ExecutionID, 2)
		term, err := e.Terminate(ctxT(t), other.ExecutionID, "stop")
		require.NoError(t, err)
		require.Equal(t, links[1].ExecutionID, term.ExecutionID)
		require.Equal(t, StateTerminated, term.State)
		first, err := e.GetExecution(ctxT(t), other.ExecutionID)
		require.NoError(t, err)
		require.Equal(t, StateContinuedAsNew, first.State, "the old run keeps its own state")
	})

	t.Run("RunsThatContinueAtOnceHopWithoutThePoll", func(t *testing.T) {
		t.Parallel()
		for _, batch := range []int{1, 0} { // the single start path, and group commit (eager first tasks)
			b := setup(t)
			require.NoError(t, b.reg.Register(harvest.NewWorkflow("hop", func(ctx harvest.Context, gen int) (int, error) {
				if gen < 3 {
					return 0, harvest.ContinueAsNew(ctx, gen+1)
				}
				return gen, nil
			})))
			// No backstop tick: each successor's task must be woken by
			// the hand-over that created it.
			e := b.engine(t, func(c *Config) { c.PollInterval, c.StartBatchMax = time.Hour, batch })
			run := start(t, e, StartRequest{WorkflowName: "hop", Input: raw(t, 0)})
			o, err := e.Result(ctxT(t), run.ExecutionID, 20*time.Second)
			require.NoError(t, err)
			require.Equal(t, StateCompleted, o.State, "batch max %d", batch)
			require.JSONEq(t, `3`, string(o.Output))
			require.Len(t, chainRuns(t, e, run.ExecutionID), 4)
		}
	})

	t.Run("CompletionCallbacksFireWhenTheChainEnds", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		got := make(chan map[string]any, 4)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var v map[string]any
			_ = json.NewDecoder(r.Body).Decode(&v)
			got <- v
		}))
		t.Cleanup(srv.Close)
		e := b.engine(t, func(c *Config) {
			c.CallbackPolicy = CallbackPolicy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
		})
		run := startCounter(t, e, 1, 2, func(r *StartRequest) { r.Callbacks = []Callback{{URL: srv.URL}} })
		signal(t, e, add(run.ExecutionID, "a", "ka"))
		signal(t, e, add(run.ExecutionID, "b", "kb"))
		select {
		case v := <-got:
			require.Equal(t, StateCompleted, v["state"], "not the hand-over's close: %v", v)
			require.Equal(t, chainRuns(t, e, run.ExecutionID)[1].ExecutionID.String(), v["execution_id"])
		case <-time.After(20 * time.Second):
			t.Fatal("no callback")
		}
		var n int
		require.NoError(t, b.pool.QueryRow(ctxT(t), `SELECT count(*) FROM harvest_callbacks`).Scan(&n))
		require.Equal(t, 1, n, "one callback for the chain")
	})

	t.Run("ExecutionTimeoutSpansTheChain", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		clock := newStepClock(0)
		e := b.engine(t, func(c *Config) { c.Clock = clock })
		execTimeout, runTimeout := time.Hour, 2*time.Hour
		run := startCounter(t, e, 1, 100, func(r *StartRequest) { r.ExecutionTimeout, r.RunTimeout = &execTimeout, &runTimeout })
		first, err := e.GetExecution(ctxT(t), run.ExecutionID)
		require.NoError(t, err)
		require.NotNil(t, first.ExecutionDeadline)
		clock.advance(10 * time.Minute) // the later runs start later in workflow time
		signal(t, e, add(run.ExecutionID, "a", "ka"))
		signal(t, e, add(run.ExecutionID, "b", "kb"))
		runs := waitLinks(t, e, run.ExecutionID, 3)
		last := runs[2]
		require.NotNil(t, last.ExecutionDeadline)
		require.True(t, first.ExecutionDeadline.Equal(*last.ExecutionDeadline), "the chain's deadline: %s, the last run's: %s",
			first.ExecutionDeadline, last.ExecutionDeadline)
		require.True(t, last.RunDeadline.Sub(*first.RunDeadline) >= 10*time.Minute, "the run timeout starts over with each run")
		clock.advance(execTimeout)
		o, err := e.Result(ctxT(t), run.ExecutionID, 20*time.Second)
		require.NoError(t, err)
		require.Equal(t, StateTimedOut, o.State, "the chain's execution timeout closes its current run")
		require.Equal(t, last.ExecutionID, o.ExecutionID)
		require.Contains(t, string(o.Error), "execution timeout 1h0m0s", "measured from the chain's start")
	})
}

// The signals of a chain: keys deduplicate across its runs on both
// signal paths; a signal to an old run lands on the current one; what a
// run did not consume carries over to its successor, keys included.
func TestChainSignals(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"batched", "single"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			e := b.engine(t)
			if path == "single" {
				e.in.Signals.Store(nil) // every signal takes signalTx
			}
			run := startCounter(t, e, 1, 3)
			first := signal(t, e, add(run.ExecutionID, "a", "ka"))
			require.True(t, first.Delivered)
			runs := waitLinks(t, e, run.ExecutionID, 2)
			next := runs[1].ExecutionID

			retry := signal(t, e, add(next, "a", "ka"))
			require.False(t, retry.Delivered, "a key delivered to the first run is a duplicate on the second")
			retry = signal(t, e, add(run.ExecutionID, "a", "ka"))
			require.False(t, retry.Delivered, "and on the first run's id")

			moved := signal(t, e, add(run.ExecutionID, "b", "kb"))
			require.True(t, moved.Delivered)
			runs = waitLinks(t, e, run.ExecutionID, 3)
			require.Equal(t, next, moved.ExecutionID, "a signal to the old run lands on the current one")
			retry = signal(t, e, add(runs[2].ExecutionID, "b", "kb"))
			require.False(t, retry.Delivered, "its key is the chain's")

			other := startCounter(t, e, 1, 3)
			fresh := signal(t, e, add(other.ExecutionID, "a", "ka"))
			require.True(t, fresh.Delivered, "another chain has a scope of its own")

			signal(t, e, add(runs[2].ExecutionID, "c", "kc"))
			o, err := e.Result(ctxT(t), run.ExecutionID, 20*time.Second)
			require.NoError(t, err)
			var out demo.CounterResult
			require.NoError(t, json.Unmarshal(o.Output, &out))
			require.Equal(t, []string{"a", "b", "c"}, out.IDs)
			require.Zero(t, e.in.SignalRetries.Load(), "every batch answered its signals itself: keys and redirects included")
		})
	}

	t.Run("SignalWithStartReachesTheCurrentRun", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := b.engine(t)
		run := startCounter(t, e, 1, 3)
		signal(t, e, add(run.ExecutionID, "a", "ka"))
		runs := waitLinks(t, e, run.ExecutionID, 2)
		req := SignalWithStartRequest{Start: StartRequest{WorkflowName: demo.CounterName, WorkflowID: run.WorkflowID,
			Input: raw(t, demo.CounterInput{Until: 3})}, SignalName: demo.CounterAddSignal,
			SignalPayload: json.RawMessage(`{"id":"b","n":1}`), IdempotencyKey: "kb"}
		res, err := e.SignalWithStart(ctxT(t), req)
		require.NoError(t, err)
		require.Equal(t, runs[1].ExecutionID, res.ExecutionID)
		require.False(t, res.StartedFresh)
		require.True(t, res.SignalDelivered)
		retry := signal(t, e, add(run.ExecutionID, "b", "kb"))
		require.False(t, retry.Delivered, "a signal-with-start key is the chain's too")
	})

	t.Run("UnconsumedSignalsCarryOverWithTheirKeys", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		g := b.registerCarry(t)
		e := b.engine(t)
		run := start(t, e, StartRequest{WorkflowName: "carry", Input: raw(t, 0)})
		g.waitEntered(t)
		for _, s := range []string{"a", "b", "c"} {
			signal(t, e, SignalRequest{ExecutionID: run.ExecutionID, SignalName: goSignal.Name(), Payload: raw(t, s), IdempotencyKey: "k" + s})
		}
		g.pass <- struct{}{}
		runs := waitLinks(t, e, run.ExecutionID, 2)
		next := runs[1].ExecutionID
		var carried []harvest.SignalReceivedData
		h, err := e.History(ctxT(t), next, HistoryQuery{After: -1})
		require.NoError(t, err)
		for _, ev := range h.Events {
			if ev.Type == harvest.EventSignalReceived {
				var d harvest.SignalReceivedData
				require.NoError(t, json.Unmarshal(ev.Data, &d))
				carried = append(carried, d)
			}
		}
		require.Equal(t, []harvest.SignalReceivedData{
			{SignalName: "go", Payload: json.RawMessage(`"b"`), IdempotencyKey: "kb"},
			{SignalName: "go", Payload: json.RawMessage(`"c"`), IdempotencyKey: "kc"},
		}, carried, "the two signals the first run did not receive, in order, with their keys")
		retry := signal(t, e, SignalRequest{ExecutionID: next, SignalName: goSignal.Name(), Payload: raw(t, "b"), IdempotencyKey: "kb"})
		require.False(t, retry.Delivered, "a carried key is still the chain's")
		signal(t, e, SignalRequest{ExecutionID: run.ExecutionID, SignalName: goSignal.Name(), Payload: raw(t, "d"), IdempotencyKey: "kd"})
		x := waitClosed(t, e, next)
		require.JSONEq(t, `["b","c","d"]`, string(x.Output))
	})
}

// registerCarry adds "carry": its first run (input 0) runs the gated
// activity, receives one "go" signal and continues as new (input 1); the
// second receives three and returns them.
func (b *testBundle) registerCarry(t *testing.T) *gate {
	g := newGate()
	act := g.activity()
	require.NoError(t, b.reg.Register(act, harvest.NewWorkflow("carry", func(ctx harvest.Context, gen int) ([]string, error) {
		if gen == 0 {
			if _, err := act.Execute(ctx, "hold").Get(ctx); err != nil {
				return nil, err
			}
			if _, err := goSignal.Receive(ctx); err != nil {
				return nil, err
			}
			return nil, harvest.ContinueAsNew(ctx, 1)
		}
		var got []string
		for len(got) < 3 {
			v, err := goSignal.Receive(ctx)
			if err != nil {
				return nil, err
			}
			got = append(got, v)
		}
		return got, nil
	})))
	return g
}

// A signal redirected from an old run waits for the current run's lock; a
// signal of the same key that lands meanwhile makes it a duplicate, which
// the redirect finds by looking the key up again once it holds the lock.
func TestRedirectedSignalLooksItsKeyUpAgain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var armed atomic.Bool
	held, release := make(chan struct{}), make(chan struct{})
	e := b.engine(t, func(c *Config) {
		c.crashHook = func(ctx context.Context, p loop.CrashPoint) error {
			if p == crashSignal && armed.CompareAndSwap(true, false) {
				close(held)
				<-release
			}
			return nil
		}
	})
	run := startCounter(t, e, 1, 5)
	signal(t, e, add(run.ExecutionID, "a", "ka"))
	runs := waitLinks(t, e, run.ExecutionID, 2)

	armed.Store(true)
	batched := make(chan SignalResult, 1)
	go func() {
		res, _ := e.Signal(context.Background(), add(runs[1].ExecutionID, "b", "kb"))
		batched <- res
	}()
	<-held // the batch holds the current run's lock, "kb" not committed
	single := make(chan error, 1)
	var res SignalResult
	go func() {
		var err error
		res, err = e.signalTx(context.Background(), add(run.ExecutionID, "b", "kb"))
		single <- err
	}()
	eventually(t, "the redirected signal waits for the current run's lock", func() bool {
		var n int
		_ = b.pool.QueryRow(context.Background(), `
			SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n)
		return n > 0
	})
	close(release)
	require.True(t, (<-batched).Delivered)
	require.NoError(t, <-single)
	require.False(t, res.Delivered, "the key landed while it waited")
	require.Equal(t, 1, keyRows(t, b, "kb"))
}

// TestChainSignalRaceOnTheLedger: a batched signal to a continued run
// looks its key up by chain, then waits for the current run's lock; a
// signal of the same key that commits there meanwhile makes the batch's
// ledger row collide with the chain's unique key (migration 012), and the
// signal is answered as a duplicate: one delivery, one ledger row.
func TestChainSignalRaceOnTheLedger(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e := b.engine(t)
	run := startCounter(t, e, 1, 3)
	require.True(t, signal(t, e, add(run.ExecutionID, "a", "ka")).Delivered)
	next := waitLinks(t, e, run.ExecutionID, 2)[1].ExecutionID

	// Hold the current run's row lock, as a concurrent signal's
	// transaction does.
	tx, err := b.pool.Begin(ctxT(t))
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.Background()) }()
	_, err = tx.Exec(ctxT(t), `SELECT 1 FROM harvest_executions WHERE execution_id = $1 FOR UPDATE`, next)
	require.NoError(t, err)
	type answer struct {
		res SignalResult
		err error
	}
	got := make(chan answer, 1)
	go func() {
		res, err := e.Signal(ctxT(t), add(run.ExecutionID, "b", "kb"))
		got <- answer{res, err}
	}()
	// A row lock's waiter waits on the holder's transaction (or tuple);
	// an advisory lock's (the lease renewal behind the batch's shared
	// fence lock) is no sign of the batch's wait.
	eventually(t, "the batch waits for the current run's lock", func() bool {
		var waiting int
		err := b.pool.QueryRow(ctxT(t), `SELECT count(*) FROM pg_stat_activity
			 WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event IN ('transactionid', 'tuple')`).Scan(&waiting)
		return err == nil && waiting > 0
	})
	// The other signal of the same key lands and commits.
	_, err = tx.Exec(ctxT(t), `INSERT INTO harvest_signals (execution_id, chain_id, signal_name, idempotency_key, event_id)
		VALUES ($1, $2, $3, 'kb', 1000)`, next, run.ExecutionID, demo.CounterAddSignal)
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctxT(t)))

	a := <-got
	require.NoError(t, a.err)
	require.False(t, a.res.Delivered, "the key landed while the batch waited: a duplicate")
	var rows int
	require.NoError(t, b.pool.QueryRow(ctxT(t), `SELECT count(*) FROM harvest_signals WHERE idempotency_key = 'kb'`).Scan(&rows))
	require.Equal(t, 1, rows, "one ledger row of the key")
	require.Positive(t, e.in.SignalRetries.Load(), "the batch failed on the ledger's unique key and the single path answered")
}

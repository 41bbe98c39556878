package engine

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/demo"
	"github.com/harvestd/harvest/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// Test workflows beside the demo ones.
var (
	goSignal = harvest.NewSignal[string]("go")
	itemSig  = harvest.NewSignal[string]("item")
	noopWF   = harvest.NewWorkflow("noop", func(_ harvest.Context, in string) (string, error) { return in, nil })
	failWF   = harvest.NewWorkflow("fail", func(harvest.Context, string) (string, error) {
		return "", harvest.NewNonRetryableError("bad", "it failed")
	})
	// block waits for a "go" signal and returns its payload; the inputs
	// "complete" and "fail" close it at once instead.
	blockWF = harvest.NewWorkflow("block", func(ctx harvest.Context, in string) (string, error) {
		switch in {
		case "complete":
			return "done", nil
		case "fail":
			return "", harvest.NewNonRetryableError("bad", "it failed")
		}
		return goSignal.Receive(ctx)
	})
	// approval declares its one signal, "approved" (an approvalSignal),
	// and returns who approved.
	approvedSig = harvest.NewSignal[approvalSignal]("approved")
	approvalWF  = harvest.NewWorkflow("approval", func(ctx harvest.Context, _ string) (string, error) {
		a, err := approvedSig.Receive(ctx)
		return a.By, err
	}).WithSignals(approvedSig)
	// collect receives "item" signals until one says "stop".
	collectWF = harvest.NewWorkflow("collect", func(ctx harvest.Context, _ string) ([]string, error) {
		var got []string
		for {
			v, err := itemSig.Receive(ctx)
			if err != nil || v == "stop" {
				return got, err
			}
			got = append(got, v)
		}
	})
)

type approvalSignal struct {
	By string `json:"by"`
}

// keyLog records the idempotency key of every activity attempt.
type keyLog struct {
	mu   sync.Mutex
	keys map[string][]string // activity name → keys in attempt order
}

func (k *keyLog) add(name, key string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.keys == nil {
		k.keys = map[string][]string{}
	}
	k.keys[name] = append(k.keys[name], key)
}

func (k *keyLog) get(name string) []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.keys[name]...)
}

type testBundle struct {
	pool  *pgxpool.Pool
	reg   *harvest.Registry
	demo  *demo.Demo
	keys  *keyLog
	nodes int
}

func setup(t testing.TB) *testBundle {
	t.Helper()
	b := &testBundle{pool: pgtest.NewPool(t), reg: harvest.NewRegistry(), demo: demo.New(demo.NewServices()), keys: &keyLog{}}
	require.NoError(t, b.demo.Register(b.reg))
	require.NoError(t, b.reg.Register(noopWF, failWF, blockWF, collectWF, approvalWF))
	b.registerActivityWorkflows(t)
	return b
}

// registerActivityWorkflows adds workflows whose activities log their keys.
func (b *testBundle) registerActivityWorkflows(t testing.TB) {
	flaky := harvest.NewActivity("flaky", func(ctx *harvest.ActivityContext, failures int) (int, error) {
		b.keys.add("flaky", ctx.IdempotencyKey().String())
		if ctx.Attempt() <= failures {
			return 0, errors.New("transient")
		}
		return ctx.Attempt(), nil
	}, harvest.ActivityOptions{Retry: &harvest.RetryPolicy{MaxAttempts: 5, InitialInterval: 10 * time.Millisecond}})
	record := harvest.NewActivity("record", func(ctx *harvest.ActivityContext, tag string) (string, error) {
		b.keys.add("record", ctx.IdempotencyKey().String())
		return ctx.IdempotencyKey().String(), nil
	})
	require.NoError(t, b.reg.Register(flaky, record,
		harvest.NewWorkflow("flaky", func(ctx harvest.Context, failures int) (int, error) {
			return flaky.Execute(ctx, failures).Get(ctx)
		}),
		harvest.NewWorkflow("two_calls", func(ctx harvest.Context, _ string) ([]string, error) {
			a, err := record.Execute(ctx, "a").Get(ctx)
			if err != nil {
				return nil, err
			}
			c, err := record.Execute(ctx, "b").Get(ctx)
			return []string{a, c}, err
		}),
	))
}

func testConfig(node string) Config {
	return Config{
		ShardID: 7, NodeID: node, PollInterval: 20 * time.Millisecond, LeaseTTL: 3 * time.Second,
		SweepInterval: time.Hour, TaskRetryMax: 200 * time.Millisecond, Logger: zerolog.Nop(),
	}
}

// engine starts an engine on the bundle's database; cleanup stops it.
func (b *testBundle) engine(t testing.TB, mutate ...func(*Config)) *Engine {
	t.Helper()
	b.nodes++
	cfg := testConfig("node-a")
	for _, m := range mutate {
		m(&cfg)
	}
	e, err := New(b.pool, b.reg, cfg)
	require.NoError(t, err)
	require.NoError(t, e.Start(context.Background()))
	t.Cleanup(e.Stop)
	return e
}

// crash stops an engine's loops without releasing its lease, as a
// killed process would leave it.
func crash(e *Engine) { e.Abandon() }

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func start(t testing.TB, e *Engine, req StartRequest) StartResult {
	t.Helper()
	res, err := e.StartWorkflow(ctxT(t), req)
	require.NoError(t, err)
	return res
}

func raw(t testing.TB, v any) json.RawMessage {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// waitClosed waits for the run to close and returns it.
func waitClosed(t *testing.T, e *Engine, id uuid.UUID) Execution {
	t.Helper()
	o, err := e.Result(ctxT(t), id, 20*time.Second)
	require.NoError(t, err)
	require.True(t, IsTerminal(o.State), "execution %s still %s (last error %q)", id, o.State, o.LastError)
	x, err := e.GetExecution(ctxT(t), id)
	require.NoError(t, err)
	// A handed-over outcome (runs.Watch) is exactly what a read returns.
	require.Equal(t, Outcome{ExecutionID: x.ExecutionID, State: x.State, Output: x.Output, Error: x.Error,
		CompletedAt: x.CompletedAt, ContinuedTo: x.ContinuedTo}, o)
	return x
}

// eventTypes lists the run's event types in order.
func eventTypes(t *testing.T, pool *pgxpool.Pool, id uuid.UUID) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT event_type FROM harvest_events WHERE execution_id = $1 ORDER BY event_id`, id)
	require.NoError(t, err)
	defer rows.Close()
	var types []string
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		types = append(types, s)
	}
	require.NoError(t, rows.Err())
	return types
}

func count(types []string, want harvest.EventType) int {
	n := 0
	for _, s := range types {
		if s == string(want) {
			n++
		}
	}
	return n
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/fence"
	"github.com/harvestd/harvest/engine/internal/store"
)

// echoWF returns its input, whatever JSON it is.
var echoWF = harvest.NewWorkflow("echo_any", func(_ harvest.Context, in any) (any, error) { return in, nil })

// deferredBundle is a shard whose engine runs on a test clock.
type deferredBundle struct {
	*testBundle
	clock *stepClock
	e     *Engine
}

func setupDeferred(t *testing.T, mutate ...func(*Config)) *deferredBundle {
	t.Helper()
	db := &deferredBundle{testBundle: setup(t), clock: newStepClock(0)}
	require.NoError(t, db.reg.Register(echoWF))
	db.e = db.engine(t, mutate...)
	return db
}

func (db *deferredBundle) engine(t *testing.T, mutate ...func(*Config)) *Engine {
	t.Helper()
	return db.testBundle.engine(t, append([]func(*Config){func(c *Config) { c.Clock = db.clock }}, mutate...)...)
}

func deferStart(t *testing.T, e *Engine, req DeferRequest) Deferred {
	t.Helper()
	if req.WorkflowName == "" {
		req.WorkflowName = echoWF.Name()
	}
	d, err := e.Defer(ctxT(t), req)
	require.NoError(t, err)
	require.Equal(t, ShardOf(d.ID), e.ShardID(), "a deferred id routes to its shard")
	return d
}

// waitDeferred waits until the item is in state and returns it.
func waitDeferred(t *testing.T, e *Engine, id uuid.UUID, state string) Deferred {
	t.Helper()
	var d Deferred
	eventually(t, fmt.Sprintf("deferred %s %s", id, state), func() bool {
		var err error
		d, err = e.GetDeferred(context.Background(), id)
		return err == nil && d.State == state
	})
	return d
}

// deferredRuns counts the runs started under each deferred key.
func deferredRuns(t *testing.T, pool *pgxpool.Pool) map[string]int {
	t.Helper()
	rows, err := pool.Query(ctxT(t), `SELECT idempotency_key, count(*) FROM harvest_executions
		 WHERE idempotency_key LIKE 'hv:deferred:%' GROUP BY 1`)
	require.NoError(t, err)
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var key string
		var n int
		require.NoError(t, rows.Scan(&key, &n))
		out[key] = n
	}
	require.NoError(t, rows.Err())
	return out
}

// startedOutput waits for the item's run to close and returns its output.
func startedOutput(t *testing.T, e *Engine, id uuid.UUID) string {
	t.Helper()
	d := waitDeferred(t, e, id, DeferredStarted)
	x := waitClosed(t, e, uuid.MustParse(d.ExecutionID))
	require.Equal(t, StateCompleted, x.State)
	return string(x.Output)
}

// stillPending checks the item is pending after the loop had the time
// to fire it (several polls).
func stillPending(t *testing.T, e *Engine, id uuid.UUID) {
	t.Helper()
	time.Sleep(5 * e.cfg.PollInterval) // the absence of a fire: nothing to poll for
	d, err := e.GetDeferred(ctxT(t), id)
	require.NoError(t, err)
	require.Equal(t, DeferredPending, d.State)
}

func TestDeferredDebounce(t *testing.T) {
	t.Parallel()
	t.Run("the last input once the key is quiet", func(t *testing.T) {
		t.Parallel()
		db := setupDeferred(t)
		p := &Debounce{Key: "k", Window: time.Minute}
		first := deferStart(t, db.e, DeferRequest{Input: raw(t, "a"), Debounce: p})
		require.Equal(t, DeferredPending, first.State)
		db.clock.advance(40 * time.Second)
		second := deferStart(t, db.e, DeferRequest{Input: raw(t, "b"), Debounce: p})
		require.Equal(t, first.ID, second.ID, "a start inside the window joins the item")
		require.Equal(t, 2, second.Starts)
		other := deferStart(t, db.e, DeferRequest{Input: raw(t, "x"), Debounce: &Debounce{Key: "other", Window: time.Minute}})
		require.NotEqual(t, first.ID, other.ID)
		db.clock.advance(40 * time.Second) // 80 s after the first, 40 s after the last
		stillPending(t, db.e, first.ID)
		db.clock.advance(30 * time.Second)
		require.Equal(t, `"b"`, startedOutput(t, db.e, first.ID))
		require.Equal(t, `"x"`, startedOutput(t, db.e, other.ID))
		require.Equal(t, map[string]int{DeferredKey(first.ID): 1, DeferredKey(other.ID): 1}, deferredRuns(t, db.pool))
		third := deferStart(t, db.e, DeferRequest{Input: raw(t, "c"), Debounce: p})
		require.NotEqual(t, first.ID, third.ID, "a start after the fire opens a new item")
	})
	t.Run("max_wait fires a key that is never quiet", func(t *testing.T) {
		t.Parallel()
		db := setupDeferred(t)
		p := &Debounce{Key: "busy", Window: time.Minute, MaxWait: 3 * time.Minute}
		first := deferStart(t, db.e, DeferRequest{Input: raw(t, 0), Debounce: p})
		for i := 1; i <= 3; i++ {
			db.clock.advance(50 * time.Second)
			d := deferStart(t, db.e, DeferRequest{Input: raw(t, i), Debounce: p})
			require.Equal(t, first.ID, d.ID)
		}
		stillPending(t, db.e, first.ID) // 150 s: under max_wait, 0 s quiet
		db.clock.advance(31 * time.Second)
		require.Equal(t, `3`, startedOutput(t, db.e, first.ID))
		d, err := db.e.GetDeferred(ctxT(t), first.ID)
		require.NoError(t, err)
		require.True(t, first.FirstAt.Add(3*time.Minute).Equal(d.FireAt), "fired at its deadline %s", d.FireAt)
	})
	t.Run("max_wait defaults to an hour", func(t *testing.T) {
		t.Parallel()
		db := setupDeferred(t)
		d := deferStart(t, db.e, DeferRequest{Debounce: &Debounce{Key: "k", Window: 2 * time.Hour}})
		require.Equal(t, d.FirstAt.Add(time.Hour), d.FireAt)
	})
}

func TestDeferredBatch(t *testing.T) {
	t.Parallel()
	t.Run("fires the list of inputs when full", func(t *testing.T) {
		t.Parallel()
		db := setupDeferred(t)
		p := &Batch{Key: "b", MaxSize: 3, MaxWait: time.Hour}
		var ids []uuid.UUID
		for _, in := range []any{"a", map[string]int{"n": 1}, nil} {
			d := deferStart(t, db.e, DeferRequest{Input: jsonOrNil(t, in), Batch: p})
			ids = append(ids, d.ID)
		}
		require.Equal(t, []uuid.UUID{ids[0], ids[0], ids[0]}, ids)
		require.JSONEq(t, `["a", {"n": 1}, null]`, startedOutput(t, db.e, ids[0]))
		next := deferStart(t, db.e, DeferRequest{Input: raw(t, "d"), Batch: p})
		require.NotEqual(t, ids[0], next.ID, "a full batch takes no more")
		require.Equal(t, map[string]int{DeferredKey(ids[0]): 1}, deferredRuns(t, db.pool))
	})
	t.Run("fires what it holds at max_wait", func(t *testing.T) {
		t.Parallel()
		db := setupDeferred(t)
		p := &Batch{Key: "b", MaxSize: 10, MaxWait: time.Minute}
		first := deferStart(t, db.e, DeferRequest{Input: raw(t, 1), Batch: p})
		db.clock.advance(30 * time.Second)
		deferStart(t, db.e, DeferRequest{Input: raw(t, 2), Batch: p})
		stillPending(t, db.e, first.ID)
		db.clock.advance(31 * time.Second)
		require.JSONEq(t, `[1, 2]`, startedOutput(t, db.e, first.ID))
	})
	t.Run("an input that would take a batch past its bytes closes it", func(t *testing.T) {
		t.Parallel()
		db := setupDeferred(t, func(c *Config) { c.BatchInputBytes = 16 })
		p := &Batch{Key: "b", MaxSize: 100, MaxWait: time.Hour}
		a := deferStart(t, db.e, DeferRequest{Input: raw(t, "aaaaa"), Batch: p}) // 7 bytes of JSON
		require.Equal(t, a.ID, deferStart(t, db.e, DeferRequest{Input: raw(t, "bbbbb"), Batch: p}).ID)
		c := deferStart(t, db.e, DeferRequest{Input: raw(t, "ccccc"), Batch: p})
		require.NotEqual(t, a.ID, c.ID, "21 bytes would pass 16: the next batch")
		require.JSONEq(t, `["aaaaa", "bbbbb"]`, startedOutput(t, db.e, a.ID), "closed, it fires at once, not at max_wait")
		big := deferStart(t, db.e, DeferRequest{Input: raw(t, strings.Repeat("x", 40)), Batch: p})
		require.NotEqual(t, c.ID, big.ID)
		require.JSONEq(t, `["ccccc"]`, startedOutput(t, db.e, c.ID))
		next := deferStart(t, db.e, DeferRequest{Input: raw(t, "d"), Batch: p})
		require.NotEqual(t, big.ID, next.ID, "a batch past the bound by its one input takes no more")
		require.JSONEq(t, `["`+strings.Repeat("x", 40)+`"]`, startedOutput(t, db.e, big.ID))
		require.Equal(t, map[string]int{DeferredKey(a.ID): 1, DeferredKey(c.ID): 1, DeferredKey(big.ID): 1}, deferredRuns(t, db.pool))
	})
	t.Run("a start that cannot make room is unavailable and writes nothing", func(t *testing.T) {
		t.Parallel()
		// Each batch the start closes is followed, before the start can
		// join the next, by another start that opens and fills it.
		fills := 0
		db := setupDeferred(t, func(c *Config) {
			c.BatchInputBytes = 16
			c.batchClosedHook = func(ctx context.Context, tx *fence.Tx) error {
				fills++
				full := raw(t, strings.Repeat("f", 14)) // 16 bytes of JSON
				_, err := store.AppendBatch(ctx, tx, NewExecutionID(c.ShardID), echoWF.Name(), "b", full,
					100, time.Now(), time.Hour.Microseconds(), int64(len(full)), int64(16))
				return err
			}
		})
		p := &Batch{Key: "b", MaxSize: 100, MaxWait: time.Hour}
		a := deferStart(t, db.e, DeferRequest{Input: raw(t, strings.Repeat("a", 14)), Batch: p})
		_, err := db.e.Defer(ctxT(t), DeferRequest{WorkflowName: echoWF.Name(), Input: raw(t, "bbbbb"), Batch: p})
		require.ErrorIs(t, err, ErrUnavailable)
		require.Equal(t, batchCloseTries-1, fills, "a close before each try but the first")
		require.Equal(t, 1, countRows(t, db.testBundle, `SELECT count(*) FROM harvest_deferred`), "nothing written")
		require.Equal(t, 1, countRows(t, db.testBundle, `SELECT count(*) FROM harvest_deferred WHERE open`), "the first batch still open")
		stillPending(t, db.e, a.ID)
	})
	t.Run("a batch of one fires at once", func(t *testing.T) {
		t.Parallel()
		db := setupDeferred(t)
		d := deferStart(t, db.e, DeferRequest{Input: raw(t, "solo"), Batch: &Batch{Key: "one", MaxSize: 1}})
		require.JSONEq(t, `["solo"]`, startedOutput(t, db.e, d.ID))
	})
}

func TestDeferredThrottle(t *testing.T) {
	t.Parallel()
	db := setupDeferred(t)
	p := &Throttle{Key: "t", Rate: 1, Per: time.Minute, MaxBacklog: 2}
	first := deferStart(t, db.e, DeferRequest{Input: raw(t, 1), Throttle: p})
	require.Equal(t, `1`, startedOutput(t, db.e, first.ID), "an idle key's start fires at once")
	second := deferStart(t, db.e, DeferRequest{Input: raw(t, 2), Throttle: p})
	third := deferStart(t, db.e, DeferRequest{Input: raw(t, 3), Throttle: p})
	require.Equal(t, first.FireAt.Add(time.Minute), second.FireAt)
	require.Equal(t, first.FireAt.Add(2*time.Minute), third.FireAt)

	_, err := db.e.Defer(ctxT(t), DeferRequest{WorkflowName: echoWF.Name(), Input: raw(t, 4), Throttle: p})
	var throttled *ThrottledError
	require.ErrorAs(t, err, &throttled, "past the backlog bound")
	require.Equal(t, 2, throttled.Backlog)
	// Until the second's slot, a minute after the first fired a moment ago
	// (how long a moment depends on the machine).
	require.LessOrEqual(t, throttled.RetryAfter, time.Minute, "until the second's slot")
	require.Greater(t, throttled.RetryAfter, 30*time.Second, "until the second's slot")
	other := deferStart(t, db.e, DeferRequest{Input: raw(t, "o"), Throttle: &Throttle{Key: "other", Rate: 1, Per: time.Minute, MaxBacklog: 1}})
	require.Equal(t, `"o"`, startedOutput(t, db.e, other.ID), "keys are paced apart")

	stillPending(t, db.e, second.ID)
	db.clock.advance(time.Minute)
	require.Equal(t, `2`, startedOutput(t, db.e, second.ID))
	fourth := deferStart(t, db.e, DeferRequest{Input: raw(t, 4), Throttle: p})
	require.Equal(t, first.FireAt.Add(3*time.Minute), fourth.FireAt, "the freed place takes the next slot")
	d, err := db.e.GetDeferred(ctxT(t), third.ID)
	require.NoError(t, err)
	require.Equal(t, DeferredPending, d.State)
}

func TestDeferredGate(t *testing.T) {
	t.Parallel()
	db := setupDeferred(t)
	require.NoError(t, db.e.CloseGate(ctxT(t), Gate{ID: "hold", ScopeKind: "workflow_name", ScopeValue: echoWF.Name(),
		Reason: "incident", CreatedAt: time.Now()}))
	d := deferStart(t, db.e, DeferRequest{Input: raw(t, "g"), Batch: &Batch{Key: "g", MaxSize: 1}})
	eventually(t, "a gated fire attempt", func() bool {
		var lastErr string
		err := db.pool.QueryRow(context.Background(), `SELECT coalesce(last_error, '') FROM harvest_outbox WHERE command_id = $1`,
			DeferredKey(d.ID)).Scan(&lastErr)
		return err == nil && lastErr != ""
	})
	got, err := db.e.GetDeferred(ctxT(t), d.ID)
	require.NoError(t, err)
	require.Equal(t, DeferredFiring, got.State, "a gate holds the fire back")
	require.Empty(t, deferredRuns(t, db.pool))
	_, err = db.e.OpenGate(ctxT(t), "hold")
	require.NoError(t, err)
	require.JSONEq(t, `["g"]`, startedOutput(t, db.e, d.ID))
}

func TestDeferredList(t *testing.T) {
	t.Parallel()
	db := setupDeferred(t)
	late := deferStart(t, db.e, DeferRequest{Debounce: &Debounce{Key: "late", Window: time.Hour}})
	soon := deferStart(t, db.e, DeferRequest{Batch: &Batch{Key: "soon", MaxSize: 5, MaxWait: time.Minute}})
	fired := deferStart(t, db.e, DeferRequest{Batch: &Batch{Key: "now", MaxSize: 1}})
	waitDeferred(t, db.e, fired.ID, DeferredStarted)
	list, err := db.e.ListDeferred(ctxT(t))
	require.NoError(t, err)
	var ids []uuid.UUID
	for _, d := range list {
		ids = append(ids, d.ID)
	}
	require.Equal(t, []uuid.UUID{soon.ID, late.ID}, ids, "the pending items, the soonest first")
	_, err = db.e.GetDeferred(ctxT(t), NewExecutionID(7))
	require.ErrorIs(t, err, ErrNotFound)
}

func TestDeferredRefusals(t *testing.T) {
	t.Parallel()
	db := setupDeferred(t)
	for _, tc := range []struct {
		name string
		req  DeferRequest
		want error
	}{
		{"no policy", DeferRequest{}, ErrInvalidArgument},
		{"two policies", DeferRequest{Debounce: &Debounce{Key: "k", Window: time.Second}, Batch: &Batch{Key: "k"}}, ErrInvalidArgument},
		{"unknown workflow", DeferRequest{WorkflowName: "nope", Batch: &Batch{Key: "k"}}, ErrUnknownWorkflow},
		{"input not JSON", DeferRequest{Input: []byte(`{`), Batch: &Batch{Key: "k"}}, ErrInvalidArgument},
		{"empty key", DeferRequest{Batch: &Batch{}}, ErrInvalidArgument},
		{"batch with a workflow id", DeferRequest{WorkflowID: "w", Batch: &Batch{Key: "k"}}, ErrInvalidArgument},
		{"batch too big", DeferRequest{Batch: &Batch{Key: "k", MaxSize: MaxBatchSize + 1}}, ErrInvalidArgument},
		{"negative batch wait", DeferRequest{Batch: &Batch{Key: "k", MaxWait: -time.Second}}, ErrInvalidArgument},
		{"no debounce window", DeferRequest{Debounce: &Debounce{Key: "k"}}, ErrInvalidArgument},
		{"debounce window too long", DeferRequest{Debounce: &Debounce{Key: "k", Window: 8 * 24 * time.Hour}}, ErrInvalidArgument},
		{"no throttle rate", DeferRequest{Throttle: &Throttle{Key: "k"}}, ErrInvalidArgument},
		{"throttle backlog too big", DeferRequest{Throttle: &Throttle{Key: "k", Rate: 1, MaxBacklog: MaxThrottleBacklog + 1}}, ErrInvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.req.WorkflowName == "" {
				tc.req.WorkflowName = echoWF.Name()
			}
			_, err := db.e.Defer(ctxT(t), tc.req)
			require.ErrorIs(t, err, tc.want)
		})
	}
	list, err := db.e.ListDeferred(ctxT(t))
	require.NoError(t, err)
	require.Empty(t, list, "a refusal records nothing")
}

func jsonOrNil(t *testing.T, v any) json.RawMessage {
	if v == nil {
		return nil
	}
	return raw(t, v)
}

func TestDeferredSweep(t *testing.T) {
	t.Parallel()
	db := setupDeferred(t)
	done := deferStart(t, db.e, DeferRequest{Throttle: &Throttle{Key: "s", Rate: 1}})
	waitDeferred(t, db.e, done.ID, DeferredStarted)
	n, err := db.e.SweepDeferred(ctxT(t))
	require.NoError(t, err)
	require.Zero(t, n, "a start inside the window is kept")
	db.clock.advance(db.e.IdempotencyWindow() + time.Minute)
	late := deferStart(t, db.e, DeferRequest{Debounce: &Debounce{Key: "late", Window: time.Hour}})
	n, err = db.e.SweepDeferred(ctxT(t))
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	_, err = db.e.GetDeferred(ctxT(t), done.ID)
	require.ErrorIs(t, err, ErrNotFound)
	_, err = db.e.GetDeferred(ctxT(t), late.ID)
	require.NoError(t, err, "a pending item is never swept")
	var keys int
	require.NoError(t, db.pool.QueryRow(ctxT(t), `SELECT count(*) FROM harvest_deferred_throttle`).Scan(&keys))
	require.Zero(t, keys, "the idle throttle key's pace row is swept")
}

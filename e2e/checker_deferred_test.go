package e2e

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// deferredWorld is what a correct cluster leaves of a few deferred
// starts: a debounce item that ran the later of its two starts, a batch
// of three inputs (one from an attempt whose answer was lost) and one of
// one, and two throttle items a slot apart (the second start refused 429
// once), each started with its run; the items in shard 0, the runs in
// both shards.
type deferredWorld struct {
	t     *testing.T
	ctx   context.Context
	conns [2]*pgx.Conn
	dsns  map[uint16]string
	t0    time.Time
	ops   []*Op
	// items and their runs, by name: deb, bat, bat2, thr1, thr2.
	items, runs map[string]string
	runShard    map[string]uint16
	without     string // the item whose run is not planted
}

func newDeferredWorld(t *testing.T) *deferredWorld { return newDeferredWorldWithout(t, "") }

// newDeferredWorldWithout plants no run for item name (it still records
// one).
func newDeferredWorldWithout(t *testing.T, name string) *deferredWorld {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	w := &deferredWorld{t: t, ctx: ctx, dsns: map[uint16]string{}, t0: time.Now().UTC().Add(-time.Minute).Truncate(time.Millisecond),
		items: map[string]string{}, runs: map[string]string{}, runShard: map[string]uint16{}, without: name}
	for shard := range 2 {
		dsn, conn := plantDB(ctx, t)
		w.conns[shard], w.dsns[uint16(shard)] = conn, dsn
	}
	w.plant("deb", KindDebounce, "deb-1", debounceWorkflowID("2.0"), `{"activities": 1, "token": "2.0"}`, 2, 0, 1)
	w.plant("bat", KindBatch, "bat-1", "", `[{"token": "3.0"}, {"token": "4.0"}, {"token": "4.1"}]`, 3, 0, 0)
	w.plant("bat2", KindBatch, "bat-1", "", `[{"token": "5.0"}]`, 1, time.Second, 1)
	w.plant("thr1", KindThrottle, "thr-1", "", `{"activities": 1, "token": "6.0"}`, 1, 0, 0)
	w.plant("thr2", KindThrottle, "thr-1", "", `{"activities": 1, "token": "7.1"}`, 1, throttlePer/throttleRate, 1)
	ok := Attempt{Status: http.StatusAccepted}
	w.ops = []*Op{
		w.op(1, KindDebounce, "deb-1", "deb", 0, ok),
		w.op(2, KindDebounce, "deb-1", "deb", 100*time.Millisecond, ok),
		w.op(3, KindBatch, "bat-1", "bat", 0, ok),
		w.op(4, KindBatch, "bat-1", "bat", 100*time.Millisecond, Attempt{Err: "timeout"}, ok),
		w.op(5, KindBatch, "bat-1", "bat2", time.Second, ok),
		w.op(6, KindThrottle, "thr-1", "thr1", 0, ok),
		w.op(7, KindThrottle, "thr-1", "thr2", 0, Attempt{Status: http.StatusTooManyRequests}, ok),
	}
	return w
}

// op is submission id, answered with item name (its last attempt's 202).
func (w *deferredWorld) op(id int64, kind, key, item string, at time.Duration, attempts ...Attempt) *Op {
	return &Op{ID: id, Kind: kind, Workflow: deferredWorkflow(kind), PolicyKey: key, Key: key + "-" + item, OK: true,
		Status: http.StatusAccepted, DeferredID: w.items[item], Attempts: attempts, Begin: w.t0.Add(at), End: w.t0.Add(at + 10*time.Millisecond)}
}

// plant records a started item in shard 0, due at t0+due, and its run in
// runShard.
func (w *deferredWorld) plant(name, policy, key, wfID, input string, starts int, due time.Duration, runShard uint16) {
	id := newExecID(0)
	w.items[name] = id
	w.exec(0, `
		INSERT INTO harvest_deferred (deferred_id, policy, workflow_name, policy_key, open, state, workflow_id, input, starts,
		       first_at, fire_at, deadline_at, fired_at)
		VALUES ($1, $2, $3, $4, false, 'started', $5, $6::jsonb, $7, $8, $8, $8, $8)`,
		id, policy, deferredWorkflow(policy), key, wfID, input, starts, w.t0.Add(due))
	w.runs[name] = newExecID(runShard)
	if name != w.without {
		w.runs[name] = w.plantRun(runShard, name, input)
	}
	w.runShard[name] = runShard
	w.exec(0, `UPDATE harvest_deferred SET execution_id = $2 WHERE deferred_id = $1`, id, w.runs[name])
}

// plantRun plants a completed run of item name's key with input in shard.
func (w *deferredWorld) plantRun(shard uint16, name, input string) string {
	var policy, wfID string
	require.NoError(w.t, w.conns[0].QueryRow(w.ctx, `SELECT policy, workflow_id FROM harvest_deferred WHERE deferred_id = $1`,
		w.items[name]).Scan(&policy, &wfID))
	run := newExecID(shard)
	if wfID == "" {
		wfID = run
	}
	require.NoError(w.t, plantExecution(w.ctx, w.conns[shard], run, deferredWorkflow(policy), wfID, deferredKeyPrefix+w.items[name], "COMPLETED"))
	w.exec(shard, `UPDATE harvest_executions SET input = $2::jsonb WHERE execution_id = $1`, run, input)
	return run
}

func (w *deferredWorld) exec(shard uint16, sql string, args ...any) {
	_, err := w.conns[shard].Exec(w.ctx, sql, args...)
	require.NoError(w.t, err)
}

// setInput sets the input of item name and of its run.
func (w *deferredWorld) setInput(name, input string, starts int) {
	w.exec(0, `UPDATE harvest_deferred SET input = $2::jsonb, starts = $3 WHERE deferred_id = $1`, w.items[name], input, starts)
	w.exec(w.runShard[name], `UPDATE harvest_executions SET input = $2::jsonb WHERE execution_id = $1`, w.runs[name], input)
}

func (w *deferredWorld) check() map[string]int {
	w.t.Helper()
	st, err := ReadDB(w.ctx, w.dsns)
	require.NoError(w.t, err)
	got := map[string]int{}
	for _, v := range Check(w.ops, st) {
		w.t.Logf("violation [%s] %s", v.Check, v.Detail)
		got[v.Check]++
	}
	return got
}

func TestCheckDeferred(t *testing.T) {
	t.Run("clean", func(t *testing.T) {
		w := newDeferredWorld(t)
		require.Empty(t, w.check())
		st, err := ReadDB(w.ctx, w.dsns)
		require.NoError(t, err)
		require.Contains(t, DeferredStats(w.ops, st), "1 starts committed whose answer was lost; items: debounce 1 (2 starts), batch 2 (4 inputs, 0 full), throttle 2; 5 items fired, 5 runs")
	})
	t.Run("planted duplicate run of an item's key", func(t *testing.T) {
		w := newDeferredWorld(t)
		w.plantRun(0, "bat", `[{"token": "3.0"}, {"token": "4.0"}, {"token": "4.1"}]`)
		require.Equal(t, map[string]int{CheckDeferredOnce: 1}, w.check())
	})
	t.Run("a fired item without its run", func(t *testing.T) {
		w := newDeferredWorldWithout(t, "thr1")
		require.Equal(t, map[string]int{CheckDeferredOnce: 1}, w.check())
	})
	t.Run("an item still pending after the heal", func(t *testing.T) {
		w := newDeferredWorldWithout(t, "thr2")
		w.exec(0, `UPDATE harvest_deferred SET state = 'pending', execution_id = NULL, fired_at = NULL WHERE deferred_id = $1`, w.items["thr2"])
		require.Equal(t, map[string]int{CheckDeferredFired: 1}, w.check())
	})
	t.Run("a run of an item not fired", func(t *testing.T) {
		w := newDeferredWorld(t)
		w.exec(0, `UPDATE harvest_deferred SET state = 'pending', execution_id = NULL WHERE deferred_id = $1`, w.items["bat2"])
		require.Equal(t, map[string]int{CheckDeferredFired: 1, CheckDeferredOnce: 1}, w.check())
	})
	t.Run("a failed item", func(t *testing.T) {
		w := newDeferredWorld(t)
		w.exec(0, `UPDATE harvest_deferred SET state = 'failed', reason = 'planted', execution_id = NULL WHERE deferred_id = $1`, w.items["deb"])
		require.Equal(t, map[string]int{CheckDeferredFired: 1, CheckDeferredOnce: 1}, w.check())
	})
	t.Run("an item recording another run", func(t *testing.T) {
		w := newDeferredWorld(t)
		w.exec(0, `UPDATE harvest_deferred SET execution_id = $2 WHERE deferred_id = $1`, w.items["thr1"], w.runs["thr2"])
		require.Equal(t, map[string]int{CheckDeferredOnce: 1}, w.check())
	})
	t.Run("planted lost batch input", func(t *testing.T) {
		w := newDeferredWorld(t)
		w.setInput("bat", `[{"token": "4.0"}, {"token": "4.1"}]`, 2)
		require.Equal(t, map[string]int{CheckDeferredInput: 1}, w.check())
	})
	t.Run("a lost answer's input is no loss", func(t *testing.T) {
		w := newDeferredWorld(t)
		w.setInput("bat", `[{"token": "3.0"}, {"token": "4.1"}]`, 2)
		require.Empty(t, w.check())
	})
	t.Run("a batch input in two batches", func(t *testing.T) {
		w := newDeferredWorld(t)
		w.setInput("bat2", `[{"token": "3.0"}, {"token": "5.0"}]`, 2)
		require.Equal(t, map[string]int{CheckDeferredInput: 1}, w.check())
	})
	t.Run("a lost answer's input in two batches", func(t *testing.T) {
		w := newDeferredWorld(t)
		w.setInput("bat2", `[{"token": "5.0"}, {"token": "4.0"}]`, 2)
		require.Equal(t, map[string]int{CheckDeferredInput: 1}, w.check())
	})
	t.Run("a refused attempt's input in an item", func(t *testing.T) {
		w := newDeferredWorld(t)
		w.setInput("bat2", `[{"token": "5.0"}, {"token": "7.0"}]`, 2)
		require.Positive(t, w.check()[CheckDeferredInput])
	})
	t.Run("an input nobody sent", func(t *testing.T) {
		w := newDeferredWorld(t)
		w.setInput("bat2", `[{"token": "5.0"}, {"token": "99.0"}]`, 2)
		require.Equal(t, map[string]int{CheckDeferredInput: 1}, w.check())
	})
	t.Run("a batch out of order", func(t *testing.T) {
		w := newDeferredWorld(t)
		w.setInput("bat", `[{"token": "4.1"}, {"token": "4.0"}, {"token": "3.0"}]`, 3)
		require.Equal(t, map[string]int{CheckDeferredInput: 1}, w.check())
	})
	t.Run("a batch whose starts and inputs disagree", func(t *testing.T) {
		w := newDeferredWorld(t)
		w.exec(0, `UPDATE harvest_deferred SET starts = 4 WHERE deferred_id = $1`, w.items["bat"])
		require.Equal(t, map[string]int{CheckDeferredInput: 1}, w.check())
	})
	t.Run("a run with another input than its item", func(t *testing.T) {
		w := newDeferredWorld(t)
		w.exec(1, `UPDATE harvest_executions SET input = '[]'::jsonb WHERE execution_id = $1`, w.runs["bat2"])
		require.Equal(t, map[string]int{CheckDeferredInput: 1}, w.check())
	})
	t.Run("a debounce that ran an older input of its burst", func(t *testing.T) {
		w := newDeferredWorld(t)
		w.setInput("deb", `{"activities": 1, "token": "1.0"}`, 2)
		w.exec(0, `UPDATE harvest_deferred SET workflow_id = $2 WHERE deferred_id = $1`, w.items["deb"], debounceWorkflowID("1.0"))
		w.exec(1, `UPDATE harvest_executions SET workflow_id = $2 WHERE execution_id = $1`, w.runs["deb"], debounceWorkflowID("1.0"))
		require.Equal(t, map[string]int{CheckDeferredInput: 1}, w.check())
	})
	t.Run("a debounce that ran a lost answer's input, which may have joined late", func(t *testing.T) {
		w := newDeferredWorld(t)
		w.ops[0].Attempts = []Attempt{{Err: "timeout"}, {Status: http.StatusAccepted}}
		w.setInput("deb", `{"activities": 1, "token": "1.0"}`, 3)
		w.exec(0, `UPDATE harvest_deferred SET workflow_id = $2 WHERE deferred_id = $1`, w.items["deb"], debounceWorkflowID("1.0"))
		w.exec(1, `UPDATE harvest_executions SET workflow_id = $2 WHERE execution_id = $1`, w.runs["deb"], debounceWorkflowID("1.0"))
		require.Empty(t, w.check())
	})
	t.Run("a debounce run under another workflow id", func(t *testing.T) {
		w := newDeferredWorld(t)
		w.exec(1, `UPDATE harvest_executions SET workflow_id = 'other' WHERE execution_id = $1`, w.runs["deb"])
		require.Equal(t, map[string]int{CheckDeferredInput: 1}, w.check())
	})
	t.Run("an answer naming an item no shard holds", func(t *testing.T) {
		w := newDeferredWorld(t)
		w.ops[4].DeferredID = newExecID(1)
		require.Positive(t, w.check()[CheckDeferredInput])
	})
	t.Run("throttle slots too close", func(t *testing.T) {
		w := newDeferredWorld(t)
		w.exec(0, `UPDATE harvest_deferred SET fire_at = fire_at - interval '150 milliseconds' WHERE deferred_id = $1`, w.items["thr2"])
		require.Equal(t, map[string]int{CheckThrottlePace: 1}, w.check())
	})
	t.Run("a run of an item no shard holds", func(t *testing.T) {
		w := newDeferredWorld(t)
		require.NoError(t, plantExecution(w.ctx, w.conns[1], newExecID(1), wfChild, "x", deferredKeyPrefix+newExecID(0), "COMPLETED"))
		require.Equal(t, map[string]int{CheckPhantom: 1}, w.check())
	})
	t.Run("an item of a key nobody used", func(t *testing.T) {
		w := newDeferredWorld(t)
		w.exec(0, `UPDATE harvest_deferred SET policy_key = 'bat-9' WHERE deferred_id = $1`, w.items["bat2"])
		require.Positive(t, w.check()[CheckPhantom])
	})
	t.Run("a submission never answered", func(t *testing.T) {
		w := newDeferredWorld(t)
		w.ops[4].OK, w.ops[4].Status, w.ops[4].Err, w.ops[4].Attempts = false, 503, "unavailable", []Attempt{{Status: 503}}
		// Its one attempt's input may be in an item (a lost answer).
		require.Equal(t, map[string]int{CheckAnswered: 1}, w.check())
	})
}

func TestDeferredRequest(t *testing.T) {
	op := &Op{ID: 12, Kind: KindDebounce, Workflow: wfChild, PolicyKey: "deb-1"}
	req := deferredRequest(op, 2)
	require.Empty(t, req.key, "a deferred start sends no idempotency key")
	body := req.body.(map[string]any)
	require.Equal(t, map[string]any{"activities": 1, "token": "12.2"}, body["input"])
	require.Equal(t, "dbw-12.2", body["workflow_id"])
	toks, ok := tokensOf(KindBatch, `[{"token": "1.0"}, {"token": "2.1"}]`)
	require.True(t, ok)
	require.Equal(t, []string{"1.0", "2.1"}, toks)
	_, ok = tokensOf(KindThrottle, `[1]`)
	require.False(t, ok)
}

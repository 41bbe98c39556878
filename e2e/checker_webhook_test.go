package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/webhook"
)

// webhookWorld is what a correct cluster leaves of two deliveries: evt-1
// delivered, its answer lost, redelivered (deduplicated) through another
// node; evt-2 delivered and redelivered, each answered; one run each, in
// the two shards.
type webhookWorld struct {
	t     *testing.T
	ctx   context.Context
	conns [2]*pgx.Conn
	dsns  map[uint16]string
	ops   []*Op
	runs  map[string]string
}

// newWebhookDBs is an empty world of two shards.
func newWebhookDBs(t *testing.T) *webhookWorld {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	w := &webhookWorld{t: t, ctx: ctx, dsns: map[uint16]string{}, runs: map[string]string{}}
	for shard := range 2 {
		dsn, conn := plantDB(ctx, t)
		w.conns[shard], w.dsns[uint16(shard)] = conn, dsn
	}
	return w
}

func newWebhookWorld(t *testing.T) *webhookWorld {
	w := newWebhookDBs(t)
	w.runs["evt-1"] = w.plantRun(0, "evt-1")
	w.runs["evt-2"] = w.plantRun(1, "evt-2")
	yes, no := true, false
	w.ops = []*Op{
		{ID: 1, Kind: KindWebhookCreate, Workflow: wfChild, Key: webhookName, OK: true, Status: http.StatusCreated},
		{ID: 2, Kind: KindWebhook, Workflow: wfChild, Key: "evt-1", Status: 0, Err: "timeout", Attempts: []Attempt{{Node: 1, Err: "timeout"}}},
		{ID: 3, Kind: KindWebhook, Workflow: wfChild, Key: "evt-1", Dup: true, OK: true, Status: http.StatusOK, ExecID: w.runs["evt-1"], Dedup: &yes,
			Attempts: []Attempt{{Node: 2, Status: 200}}},
		{ID: 4, Kind: KindWebhook, Workflow: wfChild, Key: "evt-2", OK: true, Status: http.StatusCreated, ExecID: w.runs["evt-2"], Dedup: &no,
			Attempts: []Attempt{{Node: 3, Status: 201}}},
		{ID: 5, Kind: KindWebhook, Workflow: wfChild, Key: "evt-2", Dup: true, OK: true, Status: http.StatusOK, ExecID: w.runs["evt-2"], Dedup: &yes,
			Attempts: []Attempt{{Node: 1, Status: 200}}},
	}
	return w
}

// plantRun plants a completed run of delivery id in shard, with its
// payload as its input.
func (w *webhookWorld) plantRun(shard uint16, id string) string {
	run := newExecID(shard)
	require.NoError(w.t, plantExecution(w.ctx, w.conns[shard], run, wfChild, run, webhookKeyPrefix+id, "COMPLETED"))
	_, err := w.conns[shard].Exec(w.ctx, `UPDATE harvest_executions SET input = $2::jsonb WHERE execution_id = $1`, run, string(webhookPayload(&Op{Workflow: wfChild, Key: id})))
	require.NoError(w.t, err)
	return run
}

func (w *webhookWorld) check() map[string]int {
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

func TestCheckWebhooks(t *testing.T) {
	t.Run("clean", func(t *testing.T) {
		w := newWebhookWorld(t)
		require.Empty(t, w.check())
		st, err := ReadDB(w.ctx, w.dsns)
		require.NoError(t, err)
		require.Contains(t, WebhookStats(w.ops, st), "2 delivery ids, 4 deliveries (2 redeliveries), 3 answered (1 fresh, 2 deduplicated, 1 answered through another node than the id's first answer); 2 runs")
	})
	t.Run("planted second run of a delivery", func(t *testing.T) {
		w := newWebhookWorld(t)
		w.plantRun(0, "evt-2")
		require.Equal(t, map[string]int{CheckWebhookOnce: 1}, w.check())
	})
	t.Run("an answered delivery without its run", func(t *testing.T) {
		w := newWebhookWorld(t)
		w.ops[4].ExecID, w.ops[3].ExecID = newExecID(0), newExecID(0)
		_, err := w.conns[1].Exec(w.ctx, `UPDATE harvest_executions SET idempotency_key = NULL, workflow_id = 'x' WHERE execution_id = $1`, w.runs["evt-2"])
		require.NoError(t, err)
		require.Equal(t, 1, w.check()[CheckWebhookOnce])
	})
	t.Run("an answer naming another run", func(t *testing.T) {
		w := newWebhookWorld(t)
		w.ops[4].ExecID = w.runs["evt-1"]
		require.Equal(t, map[string]int{CheckWebhookOnce: 1}, w.check())
	})
	t.Run("two fresh answers", func(t *testing.T) {
		w := newWebhookWorld(t)
		no := false
		w.ops[4].Dedup = &no
		require.Equal(t, map[string]int{CheckWebhookOnce: 1}, w.check())
	})
	t.Run("a run with another input", func(t *testing.T) {
		w := newWebhookWorld(t)
		_, err := w.conns[0].Exec(w.ctx, `UPDATE harvest_executions SET input = '{"id": "evt-9"}'::jsonb WHERE execution_id = $1`, w.runs["evt-1"])
		require.NoError(t, err)
		require.Equal(t, map[string]int{CheckWebhookOnce: 1}, w.check())
	})
	t.Run("a run of a delivery nobody sent", func(t *testing.T) {
		w := newWebhookWorld(t)
		w.plantRun(1, "evt-9")
		require.Equal(t, map[string]int{CheckPhantom: 1}, w.check())
	})
	t.Run("a delivery never answered", func(t *testing.T) {
		w := newWebhookWorld(t)
		w.ops = w.ops[:3]
		w.ops = append(w.ops, &Op{ID: 6, Kind: KindWebhook, Workflow: wfChild, Key: "evt-2", Err: "timeout"})
		require.Equal(t, map[string]int{CheckAnswered: 1}, w.check())
	})
	t.Run("a delivery refused", func(t *testing.T) {
		w := newWebhookWorld(t)
		w.ops[4].OK, w.ops[4].Status, w.ops[4].Err = false, http.StatusNotFound, `{"code":"not_found"}`
		require.Equal(t, map[string]int{CheckRefusal: 1}, w.check())
	})
}

// newCounterWorld is a counter fed by three deliveries to the
// signal-with-start receiver, each delivered again (the last one after
// the counter completed), each answer deduplicated but the first, and
// the counter completed with each event once.
func newCounterWorld(t *testing.T) (*webhookWorld, string) {
	w := newWebhookDBs(t)
	w.ops = append(w.ops, &Op{ID: 10, Kind: KindWebhookCreate, Workflow: wfCounter, Key: webhookSWSName, OK: true, Status: http.StatusCreated})
	run := newExecID(1)
	require.NoError(t, plantExecution(w.ctx, w.conns[1], run, wfCounter, "whc-1", "", "COMPLETED"))
	for i, id := range []string{"evt-3", "evt-4", "evt-5"} {
		require.NoError(t, plantSignal(w.ctx, w.conns[1], run, webhookSWSKeyPrefix+id))
		yes, no := true, false
		w.ops = append(w.ops, &Op{ID: int64(11 + 2*i), Kind: KindWebhook, Workflow: wfCounter, WorkflowID: "whc-1", Key: id, OK: true,
			Status: http.StatusCreated, ExecID: run, Dedup: &no, Attempts: []Attempt{{Node: 1, Status: 201}}},
			&Op{ID: int64(12 + 2*i), Kind: KindWebhook, Workflow: wfCounter, WorkflowID: "whc-1", Key: id, Dup: true, OK: true,
				Status: http.StatusOK, ExecID: run, Dedup: &yes, Attempts: []Attempt{{Node: 2, Status: 200}}})
	}
	w.output(run, `{"count": 3, "sum": 3, "ids": ["evt-3", "evt-4", "evt-5"], "runs": 1}`)
	return w, run
}

func (w *webhookWorld) output(run, out string) {
	_, err := w.conns[shardOf(run)].Exec(w.ctx, `UPDATE harvest_executions SET output = $2::jsonb WHERE execution_id = $1`, run, out)
	require.NoError(w.t, err)
}

func TestCheckWebhookCounters(t *testing.T) {
	clean := newCounterWorld
	t.Run("clean", func(t *testing.T) {
		w, _ := clean(t)
		require.Empty(t, w.check())
		st, err := ReadDB(w.ctx, w.dsns)
		require.NoError(t, err)
		require.Contains(t, WebhookStats(w.ops, st), "1 counters fed by signal-with-start, 1 runs of them")
	})
	t.Run("a second run of the workflow id", func(t *testing.T) {
		w, _ := clean(t)
		require.NoError(t, plantExecution(w.ctx, w.conns[0], newExecID(0), wfCounter, "whc-1", "", "COMPLETED"))
		got := w.check()
		require.Equal(t, map[string]int{CheckWebhookSWS: 1}, got)
	})
	t.Run("an event added twice", func(t *testing.T) {
		w, run := clean(t)
		w.output(run, `{"count": 4, "sum": 4, "ids": ["evt-3", "evt-4", "evt-5", "evt-4"], "runs": 1}`)
		got := w.check()
		require.Equal(t, map[string]int{CheckWebhookSWS: 1}, got)
	})
	t.Run("an event lost", func(t *testing.T) {
		w, run := clean(t)
		w.output(run, `{"count": 2, "sum": 2, "ids": ["evt-3", "evt-5"], "runs": 1}`)
		got := w.check()
		require.Equal(t, map[string]int{CheckWebhookSWS: 1}, got)
	})
	t.Run("a second SignalReceived with a delivery's key", func(t *testing.T) {
		w, run := clean(t)
		require.NoError(t, plantSignal(w.ctx, w.conns[1], run, webhookSWSKeyPrefix+"evt-4"))
		got := w.check()
		require.Equal(t, map[string]int{CheckWebhookSWS: 1, CheckSignalOnce: 1}, got)
	})
	t.Run("a redelivery answered as delivered", func(t *testing.T) {
		w, _ := clean(t)
		no := false
		w.ops[len(w.ops)-1].Dedup = &no
		got := w.check()
		require.Equal(t, map[string]int{CheckWebhookSWS: 1}, got)
	})
	t.Run("a counter nobody fed", func(t *testing.T) {
		w, _ := clean(t)
		require.NoError(t, plantExecution(w.ctx, w.conns[0], newExecID(0), wfCounter, "whc-9", "", "COMPLETED"))
		require.Equal(t, map[string]int{CheckPhantom: 1}, w.check())
	})
}

func TestWebhookRequest(t *testing.T) {
	req := webhookRequest(&Op{Kind: KindWebhook, Workflow: wfChild, Key: "evt-7"})
	require.Empty(t, req.key)
	require.Equal(t, "/api/harvest/webhooks/"+webhookName, req.path)
	require.JSONEq(t, `{"id": "evt-7", "activities": 1}`, string(req.body.(json.RawMessage)))
	sws := webhookRequest(&Op{Kind: KindWebhook, Workflow: wfCounter, WorkflowID: "whc-3", Key: "evt-8"})
	require.Equal(t, "/api/harvest/webhooks/"+webhookSWSName, sws.path)
	require.JSONEq(t, `{"id": "evt-8", "n": 1, "wf": "whc-3", "until": 3, "every": 5}`, string(sws.body.(json.RawMessage)))
	// The receiver's own check accepts the signature the client sends.
	body, err := json.Marshal(req.body)
	require.NoError(t, err)
	h := http.Header{}
	signWebhook(h, body, time.Now())
	// The receiver as the workload creates it: the server's defaults.
	cfg, err := webhook.Config{Name: webhookName, Provider: webhook.Generic, Secret: webhookSecret, Action: webhook.ActionStart,
		Workflow: wfChild, KeyPointer: "/id", SignatureHeader: webhookSignatureHeader}.WithDefaults(false)
	require.NoError(t, err)
	require.NoError(t, cfg.Validate())
	require.Equal(t, webhookTimestampHeader, cfg.TimestampHeader)
	d, err := cfg.Verify(h, body, time.Now())
	require.NoError(t, err)
	require.Equal(t, "evt-7", d.ID)
	_, err = cfg.Verify(h, body, time.Now().Add(time.Hour))
	require.ErrorIs(t, err, webhook.ErrSignature, "a delivery signed an hour ago")
	h.Set(webhookSignatureHeader, "sha256="+webhookSignature(h.Get(webhookTimestampHeader), []byte("other")))
	_, err = cfg.Verify(h, body, time.Now())
	require.ErrorIs(t, err, webhook.ErrSignature)
}

package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/engine"
)

// TestFreshStartChecks: each check rejects a fresh start, and a keyed
// replay of a committed start passes it.
func TestFreshStartChecks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	good := map[string]any{"input": map[string]any{"user_id": 42}}
	first := b.do(t, "POST", "/workflows/typed/start", good, "Idempotency-Key", "committed")
	require.Equal(t, http.StatusCreated, first.Status, "%s", first.Raw)
	done := b.do(t, "GET", "/workflows/"+first.Body["execution_id"].(string)+"/result?wait=20s", nil)
	require.Equal(t, http.StatusOK, done.Status, "the committed run closes before counting rows")
	replayOK := func(t *testing.T, body any) {
		t.Helper()
		r := b.do(t, "POST", "/workflows/typed/start", body, "Idempotency-Key", "committed")
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		require.Equal(t, first.Body["execution_id"], r.Body["execution_id"])
		require.Equal(t, true, r.Body["deduplicated"])
	}

	for _, tc := range []struct {
		name   string
		body   map[string]any
		status int
		code   string
	}{
		{"SchemaViolation", map[string]any{"input": map[string]any{"user_id": 0}}, http.StatusUnprocessableEntity, "invalid_input"},
		{"SchemaMissingField", map[string]any{"input": map[string]any{}}, http.StatusUnprocessableEntity, "invalid_input"},
		{"NegativeDelay", map[string]any{"input": map[string]any{"user_id": 1}, "delay": "-5s"}, http.StatusBadRequest, codeInvalidArgument},
		{"DelayAndStartAt", map[string]any{"input": map[string]any{"user_id": 1}, "delay": 5, "start_at": time.Now().Add(time.Hour)}, http.StatusBadRequest, codeInvalidArgument},
		{"StartAtLongPast", map[string]any{"input": map[string]any{"user_id": 1}, "start_at": time.Now().Add(-time.Hour)}, http.StatusBadRequest, codeInvalidArgument},
		{"BadDelay", map[string]any{"input": map[string]any{"user_id": 1}, "delay": "soon"}, http.StatusBadRequest, codeInvalidArgument},
		{"CallbackLoopback", cb("http://127.0.0.1:9/hook"), http.StatusUnprocessableEntity, "callback_refused"},
		{"CallbackPrivate", cb("http://10.1.2.3/hook"), http.StatusUnprocessableEntity, "callback_refused"},
		{"CallbackMetadata", cb("http://169.254.169.254/latest/meta-data"), http.StatusUnprocessableEntity, "callback_refused"},
		{"CallbackHostnameToLoopback", cb("http://localhost:9/hook"), http.StatusUnprocessableEntity, "callback_refused"},
		{"CallbackScheme", cb("ftp://example.com/x"), http.StatusUnprocessableEntity, "callback_refused"},
		{"CallbackZonedLoopbackName", cb("http://[::1%25lo]:9/hook"), http.StatusUnprocessableEntity, "callback_refused"},
		{"CallbackZonedLoopbackIndex", cb("http://[::1%251]:9/hook"), http.StatusUnprocessableEntity, "callback_refused"},
		{"CallbackZonedLoopbackBogus", cb("http://[::1%25bogus]:9/hook"), http.StatusUnprocessableEntity, "callback_refused"},
		{"CallbackIPv4Compatible", cb("http://[::127.0.0.1]:9/hook"), http.StatusUnprocessableEntity, "callback_refused"},
		{"CallbackIPv4Mapped", cb("http://[::ffff:127.0.0.1]:9/hook"), http.StatusUnprocessableEntity, "callback_refused"},
		{"CallbackIPv4Translated", cb("http://[::ffff:0:127.0.0.1]:9/hook"), http.StatusUnprocessableEntity, "callback_refused"},
		{"CallbackNAT64", cb("http://[64:ff9b::127.0.0.1]:9/hook"), http.StatusUnprocessableEntity, "callback_refused"},
		{"Callback6to4Private", cb("http://[2002:a00:1::1]:9/hook"), http.StatusUnprocessableEntity, "callback_refused"},
		{"CallbackTeredo", cb("http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]:9/hook"), http.StatusUnprocessableEntity, "callback_refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := b.counts(t)
			r := b.do(t, "POST", "/workflows/typed/start", tc.body)
			requireError(t, r, tc.status, tc.code)
			require.Equal(t, before, b.counts(t), "nothing written")
			if tc.code == "invalid_input" {
				v := r.Body["violations"].([]any)
				require.NotEmpty(t, v)
				require.Contains(t, v[0].(map[string]any), "path")
			}
			replayOK(t, tc.body)
		})
	}

	t.Run("DelayedStartRunsLater", func(t *testing.T) {
		r := b.do(t, "POST", "/workflows/typed/start", map[string]any{"input": map[string]any{"user_id": 7}, "delay": "1h"})
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
		id := r.Body["execution_id"].(string)
		var due time.Time
		require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT wf_task_due_at FROM harvest_executions WHERE execution_id = $1`, id).Scan(&due))
		require.WithinDuration(t, time.Now().Add(time.Hour), due, time.Minute)
		res := b.do(t, "GET", "/workflows/"+id+"/result?wait=0.2", nil)
		require.Equal(t, http.StatusNoContent, res.Status, "the run waits for its start time")
	})
}

func cb(url string) map[string]any {
	return map[string]any{"input": map[string]any{"user_id": 1}, "completion_callbacks": []map[string]any{{"url": url}}}
}

func TestAdmissionGate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first := b.do(t, "POST", "/workflows/typed/start", map[string]any{"input": map[string]any{"user_id": 1}}, "Idempotency-Key", "before-incident")
	require.Equal(t, http.StatusCreated, first.Status)
	running := b.do(t, "POST", "/workflows/block/start", map[string]any{"workflow_id": "live"})
	require.Equal(t, http.StatusCreated, running.Status)

	g := b.do(t, "POST", "/admin/gates", map[string]any{"scope_kind": "workflow_name", "scope_value": "typed", "reason": "incident 42"})
	require.Equal(t, http.StatusCreated, g.Status, "%s", g.Raw)
	gateID := g.Body["gate_id"]

	r := b.do(t, "POST", "/workflows/typed/start", map[string]any{"input": map[string]any{"user_id": 2}})
	requireError(t, r, http.StatusServiceUnavailable, "admission_blocked")
	require.Equal(t, "admission blocked", r.Body["error"])
	require.Equal(t, gateID, r.Body["gate_id"])
	require.Equal(t, "incident 42", r.Body["reason"])
	require.Equal(t, "1", r.Header.Get("Retry-After"))

	replay := b.do(t, "POST", "/workflows/typed/start", map[string]any{"input": map[string]any{"user_id": 1}}, "Idempotency-Key", "before-incident")
	require.Equal(t, http.StatusOK, replay.Status, "a replay is never gated")
	malformed := b.do(t, "POST", "/workflows/typed/start", `{"input": `, "Idempotency-Key", "before-incident")
	require.Equal(t, http.StatusOK, malformed.Status, "a malformed replay with a header key is never gated")
	require.Equal(t, first.Body["execution_id"], malformed.Body["execution_id"])
	sig := b.do(t, "POST", "/workflows/"+running.Body["execution_id"].(string)+"/signal/other", "1")
	require.Equal(t, http.StatusAccepted, sig.Status, "signals are never gated")
	other := b.do(t, "POST", "/workflows/block/start", map[string]any{})
	require.Equal(t, http.StatusCreated, other.Status, "another workflow is outside the gate's scope")

	list := b.do(t, "GET", "/admin/gates", nil)
	require.Len(t, list.Body["gates"], 1)
	open := b.do(t, "DELETE", "/admin/gates/"+gateID.(string), nil)
	require.Equal(t, http.StatusOK, open.Status)
	after := b.do(t, "POST", "/workflows/typed/start", map[string]any{"input": map[string]any{"user_id": 2}})
	require.Equal(t, http.StatusCreated, after.Status, "%s", after.Raw)
	requireError(t, b.do(t, "POST", "/admin/gates", map[string]any{"scope_kind": "galaxy", "reason": "x"}), http.StatusBadRequest, codeInvalidArgument)
	requireError(t, b.do(t, "POST", "/admin/gates", map[string]any{"scope_kind": "cluster"}), http.StatusBadRequest, codeInvalidArgument)
}

// TestCompletionCallbacks: a callback to an allow-listed local receiver is
// delivered once per close; the retried attempt carries the same key.
func TestCompletionCallbacks(t *testing.T) {
	t.Parallel()
	var (
		mu    sync.Mutex
		calls []string // idempotency keys, in call order
		ok    int
		body  = map[string]any{}
	)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, r.Header.Get("Idempotency-Key"))
		if len(calls) == 1 {
			w.WriteHeader(http.StatusInternalServerError) // the first delivery fails: retried
			return
		}
		ok++
		body["state"] = r.Header.Get("X-Harvest-Execution-Id")
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(receiver.Close)
	b := setupWith(t, func(c *engine.Config) {
		c.CallbackPolicy.Allow = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	})
	r := b.do(t, "POST", "/workflows/typed/start", map[string]any{"input": map[string]any{"user_id": 5},
		"completion_callbacks": []map[string]any{{"url": receiver.URL + "/done", "headers": map[string]string{"X-Token": "t"}}}})
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
	id := r.Body["execution_id"].(string)
	deadline := time.Now().Add(20 * time.Second)
	for {
		var status string
		require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT status FROM harvest_callbacks WHERE execution_id = $1`, id).Scan(&status))
		if status == "delivered" {
			break
		}
		require.True(t, time.Now().Before(deadline), "callback not delivered (status %s)", status)
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, calls, 2)
	require.Equal(t, calls[0], calls[1], "the retry carries the same idempotency key")
	require.Equal(t, engine.CallbackKey(mustUUID(t, id), 0), calls[0])
	require.Equal(t, 1, ok, "delivered once")
	require.Equal(t, id, body["state"])
}

// TestReplayOfAKeyTheShardDoesNotKnow: a key claimed by an earlier owner
// is unknown to the serving engine, so its start skips the probe and
// goes to the start batch. It is a replay all the same, and none of a
// fresh start's checks refuses it.
func TestReplayOfAKeyTheShardDoesNotKnow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	good := map[string]any{"input": map[string]any{"user_id": 5}}
	keys := []string{"good-body", "schema-violation", "bad-delay", "gated"}
	first := map[string]response{}
	for _, k := range keys {
		r := b.do(t, "POST", "/workflows/typed/start", good, "Idempotency-Key", k)
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
		first[k] = r
	}
	b.restart(t)
	for _, k := range keys {
		require.False(t, b.engine.KnownStartKey("typed", k), "the new engine has not seen %s", k)
	}
	replayed := func(t *testing.T, key string, body any) {
		t.Helper()
		before := b.counts(t)
		r := b.do(t, "POST", "/workflows/typed/start", body, "Idempotency-Key", key)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		require.Equal(t, first[key].Body["execution_id"], r.Body["execution_id"])
		require.Equal(t, true, r.Body["deduplicated"])
		require.Equal(t, false, r.Body["started_fresh"])
		require.Equal(t, before, b.counts(t), "a replay writes nothing")
		require.True(t, b.engine.KnownStartKey("typed", key), "the replay made the key known")
	}

	t.Run("GoodBodyIsAnsweredByTheBatch", func(t *testing.T) {
		replayed(t, "good-body", good)
	})
	t.Run("SchemaViolationIsNotChecked", func(t *testing.T) {
		replayed(t, "schema-violation", map[string]any{"input": map[string]any{"user_id": 0}})
	})
	t.Run("BadDelayIsNotChecked", func(t *testing.T) {
		replayed(t, "bad-delay", map[string]any{"input": map[string]any{"user_id": 5}, "delay": "soon"})
	})
	t.Run("GateDoesNotRefuseIt", func(t *testing.T) {
		g := b.do(t, "POST", "/admin/gates", map[string]any{"scope_kind": "workflow_name", "scope_value": "typed", "reason": "incident"})
		require.Equal(t, http.StatusCreated, g.Status, "%s", g.Raw)
		replayed(t, "gated", good)
		fresh := b.do(t, "POST", "/workflows/typed/start", good, "Idempotency-Key", "fresh-while-gated")
		requireError(t, fresh, http.StatusServiceUnavailable, "admission_blocked")
		require.False(t, b.engine.KnownStartKey("typed", "fresh-while-gated"), "a refused start claims nothing")
	})
	t.Run("FreshKeyStartsFresh", func(t *testing.T) {
		r := b.do(t, "POST", "/workflows/block/start", map[string]any{}, "Idempotency-Key", "new-key")
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
		require.Equal(t, true, r.Body["started_fresh"])
		require.True(t, b.engine.KnownStartKey("block", "new-key"))
	})
}

// placedHeaders are the headers of a start (body) another node forwarded
// to shard 0, placed under catalog epoch epoch, with key.
func placedHeaders(path string, body any, epoch int, key string) []string {
	return nodeHeaders(http.MethodPost, path, body, ShardHeader, "0", EpochHeader, strconv.Itoa(epoch), "Idempotency-Key", key)
}

// TestPlacedStartOfAKeyTheShardDoesNotKnow: a start placed under a
// catalog epoch is not probed before its batch. The batch answers a live
// claim as the replay, writing nothing; a start the placement check
// refuses as moved (a newer epoch redirected its key) is answered by its
// key's live claim when it has one, else refused 503 with nothing written.
func TestPlacedStartOfAKeyTheShardDoesNotKnow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const path = "/workflows/typed/start"
	good := map[string]any{"input": map[string]any{"user_id": 7}}
	first := map[string]response{}
	for _, k := range []string{"placed-live", "placed-moved"} {
		r := b.do(t, "POST", path, good, "Idempotency-Key", k)
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
		first[k] = r
	}
	b.restart(t)
	_, err := b.pool.Exec(context.Background(), `INSERT INTO harvest_placement_redirects (workflow_name, routing_key, epoch, target_shard)
		VALUES ('typed', 'placed-moved', 5, 1), ('typed', 'moved-fresh', 5, 1)`)
	require.NoError(t, err)

	for _, k := range []string{"placed-live", "placed-moved"} {
		t.Run("Replay/"+k, func(t *testing.T) {
			before := b.counts(t)
			r := b.do(t, "POST", path, good, placedHeaders(path, good, 3, k)...)
			require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
			require.Equal(t, first[k].Body["execution_id"], r.Body["execution_id"])
			require.Equal(t, true, r.Body["deduplicated"])
			require.Equal(t, before, b.counts(t), "a replay writes nothing")
		})
	}
	t.Run("MovedFreshKeyIsRefused", func(t *testing.T) {
		before := b.counts(t)
		r := b.do(t, "POST", path, good, placedHeaders(path, good, 3, "moved-fresh")...)
		requireError(t, r, http.StatusServiceUnavailable, codeUnavailable)
		require.Equal(t, before, b.counts(t))
	})
}

package api

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/engine"
	"github.com/harvestd/harvest/harvesttest"
)

// waitDeferred polls GET /deferred/{id} until the item started and
// returns its run's execution.
func (b *testBundle) waitDeferred(t *testing.T, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := b.do(t, http.MethodGet, "/deferred/"+id, nil)
		require.Equal(t, http.StatusOK, r.Status, "body %s", r.Raw)
		if r.Body["state"] == "started" {
			run := b.do(t, http.MethodGet, "/workflows/"+r.Body["execution_id"].(string), nil)
			require.Equal(t, http.StatusOK, run.Status)
			x := run.Body["execution"].(map[string]any)
			require.Equal(t, "hv:deferred:"+id, x["idempotency_key"])
			return x
		}
		require.Contains(t, []any{"pending", "firing"}, r.Body["state"], "%s", r.Raw)
		require.True(t, time.Now().Before(deadline), "deferred %s never started: %s", id, r.Raw)
		time.Sleep(20 * time.Millisecond)
	}
}

func inputJSON(t *testing.T, x map[string]any) string {
	t.Helper()
	raw, err := json.Marshal(x["input"])
	require.NoError(t, err)
	return string(raw)
}

// TestDeferredDebounceAPI: the window is an hour of the engine's test
// clock, which moves only when the test advances it, so the second start
// lands inside it however slow the machine is.
func TestDeferredDebounceAPI(t *testing.T) {
	t.Parallel()
	clock := harvesttest.NewClock()
	b := setupWith(t, func(c *engine.Config) { c.Clock = clock })
	p := map[string]any{"key": "user-1", "window": "1h"}
	first := b.do(t, http.MethodPost, "/workflows/block/start", map[string]any{"input": 1, "debounce": p})
	require.Equal(t, http.StatusAccepted, first.Status, "body %s", first.Raw)
	require.Equal(t, "pending", first.Body["state"])
	second := b.do(t, http.MethodPost, "/workflows/block/start", map[string]any{"input": 2, "debounce": p})
	require.Equal(t, http.StatusAccepted, second.Status, "body %s", second.Raw)
	require.Equal(t, first.Body["deferred_id"], second.Body["deferred_id"], "one item for both")
	clock.Advance(2 * time.Hour)
	require.JSONEq(t, `2`, inputJSON(t, b.waitDeferred(t, first.Body["deferred_id"].(string))), "the last input")
}

func TestDeferredAPI(t *testing.T) {
	t.Parallel()
	b := setup(t)
	start := func(t *testing.T, body any, headers ...string) response {
		t.Helper()
		return b.do(t, http.MethodPost, "/workflows/block/start", body, headers...)
	}

	t.Run("batch answers 202 and starts one run with the list", func(t *testing.T) {
		var id string
		for i, in := range []string{"a", "b"} {
			r := start(t, map[string]any{"input": in, "batch_key": "orders", "batch_max_size": 2})
			require.Equal(t, http.StatusAccepted, r.Status, "body %s", r.Raw)
			require.EqualValues(t, i+1, r.Body["starts"])
			require.NotContains(t, r.Body, "execution_id")
			if id == "" {
				id = r.Body["deferred_id"].(string)
			}
			require.Equal(t, id, r.Body["deferred_id"], "the second start joins the batch")
		}
		require.JSONEq(t, `["a", "b"]`, inputJSON(t, b.waitDeferred(t, id)))
	})
	t.Run("a batch whose inputs together pass the body limit still starts", func(t *testing.T) {
		// Each start is well inside the limit (64 KiB here); the batch's
		// list of them is not, and its fire is the node's own request.
		big := strings.Repeat("x", 40<<10)
		var id string
		for range 2 {
			r := start(t, map[string]any{"input": big, "batch_key": "big", "batch_max_size": 2})
			require.Equal(t, http.StatusAccepted, r.Status, "body %s", r.Raw)
			id = r.Body["deferred_id"].(string)
		}
		x := b.waitDeferred(t, id)
		require.JSONEq(t, `["`+big+`", "`+big+`"]`, inputJSON(t, x))
	})
	t.Run("throttle past its backlog is 429 with Retry-After", func(t *testing.T) {
		p := map[string]any{"key": "api", "rate": 1, "per": "1h", "max_backlog": 1}
		first := start(t, map[string]any{"input": 1, "throttle": p})
		require.Equal(t, http.StatusAccepted, first.Status, "body %s", first.Raw)
		b.waitDeferred(t, first.Body["deferred_id"].(string))
		second := start(t, map[string]any{"input": 2, "throttle": p})
		require.Equal(t, http.StatusAccepted, second.Status, "body %s", second.Raw)
		third := start(t, map[string]any{"input": 3, "throttle": p})
		requireError(t, third, http.StatusTooManyRequests, codeThrottled)
		// The slot opens an hour after the first fire, which was a moment
		// ago: how long a moment depends on the machine.
		ra, err := strconv.Atoi(third.Header.Get("Retry-After"))
		require.NoError(t, err)
		require.InDelta(t, 3600-30, ra, 30, "Retry-After %d s: the hour to the next slot", ra)

		list := b.do(t, http.MethodGet, "/admin/deferred", nil)
		require.Equal(t, http.StatusOK, list.Status, "body %s", list.Raw)
		var ids []any
		for _, d := range list.Body["deferred"].([]any) {
			ids = append(ids, d.(map[string]any)["deferred_id"])
		}
		require.Equal(t, []any{second.Body["deferred_id"]}, ids, "only the waiting start is pending")
	})
	t.Run("refusals", func(t *testing.T) {
		for _, tc := range []struct {
			name    string
			body    any
			headers []string
			status  int
			code    string
		}{
			{"a key with a policy", map[string]any{"batch_key": "k"}, []string{"Idempotency-Key", "k1"}, http.StatusBadRequest, codeInvalidArgument},
			{"a body key with a policy", map[string]any{"idempotency_key": "k2", "debounce": map[string]any{"key": "k", "window": "1s"}}, nil, http.StatusBadRequest, codeInvalidArgument},
			{"two policies", map[string]any{"batch_key": "k", "debounce": map[string]any{"key": "k", "window": "1s"}}, nil, http.StatusBadRequest, codeInvalidArgument},
			{"throttle not an object", map[string]any{"throttle": "10/s"}, nil, http.StatusBadRequest, codeInvalidArgument},
			{"throttle without rate", map[string]any{"throttle": map[string]any{"key": "k"}}, nil, http.StatusBadRequest, codeInvalidArgument},
			{"debounce without window", map[string]any{"debounce": map[string]any{"key": "k"}}, nil, http.StatusBadRequest, codeInvalidArgument},
			{"debounce window not a duration", map[string]any{"debounce": map[string]any{"key": "k", "window": "soon"}}, nil, http.StatusBadRequest, codeInvalidArgument},
			{"empty batch key", map[string]any{"batch_key": ""}, nil, http.StatusBadRequest, codeInvalidArgument},
			{"batch key not a string", map[string]any{"batch_key": 7}, nil, http.StatusBadRequest, codeInvalidArgument},
			{"batch size too big", map[string]any{"batch_key": "k", "batch_max_size": 1001}, nil, http.StatusBadRequest, codeInvalidArgument},
			{"batch with a workflow id", map[string]any{"batch_key": "k", "workflow_id": "w"}, nil, http.StatusBadRequest, codeInvalidArgument},
			{"policy with a delay", map[string]any{"batch_key": "k", "delay": "1s"}, nil, http.StatusBadRequest, codeInvalidArgument},
		} {
			t.Run(tc.name, func(t *testing.T) {
				requireError(t, start(t, tc.body, tc.headers...), tc.status, tc.code)
			})
		}
		huge := start(t, `{"throttle": {"key": "k", "rate": 1, "per": "1s", "max_backlog": 99999999999999999999}}`)
		requireError(t, huge, http.StatusBadRequest, codeInvalidArgument)
		require.Contains(t, huge.Body["error"], `"max_backlog"`, "the refusal names the field")
		requireError(t, b.do(t, http.MethodPost, "/workflows/nope/start", map[string]any{"batch_key": "k"}), http.StatusNotFound, codeUnknownWorkflow)
		requireError(t, b.do(t, http.MethodPost, "/workflows/block/start?wait=1s", map[string]any{"batch_key": "k"}), http.StatusBadRequest, codeInvalidArgument)
		requireError(t, b.do(t, http.MethodGet, "/deferred/not-a-uuid", nil), http.StatusBadRequest, codeInvalidArgument)
		missing := b.do(t, http.MethodGet, "/deferred/00030000-0000-4000-8000-000000000000", nil)
		requireError(t, missing, http.StatusNotFound, codeNotFound)
		require.Equal(t, `deferred item "00030000-0000-4000-8000-000000000000" not found`, missing.Body["error"])
	})
	t.Run("null policies are absent: an immediate start", func(t *testing.T) {
		// As "delay": null is: clients that send every field send null.
		r := start(t, `{"input": 1, "throttle": null, "debounce": null, "batch_key": null, "batch_max_size": null, "batch_max_wait": null}`)
		require.Equal(t, http.StatusCreated, r.Status, "body %s", r.Raw)
		require.NotEmpty(t, r.Body["execution_id"])
	})
	t.Run("a committed keyed replay with a policy stays 200", func(t *testing.T) {
		first := start(t, map[string]any{"input": "x"}, "Idempotency-Key", "replay-1")
		require.Equal(t, http.StatusCreated, first.Status, "body %s", first.Raw)
		again := start(t, map[string]any{"input": "x", "batch_key": "k"}, "Idempotency-Key", "replay-1")
		require.Equal(t, http.StatusOK, again.Status, "body %s", again.Raw)
		require.Equal(t, first.Body["execution_id"], again.Body["execution_id"])
	})
}

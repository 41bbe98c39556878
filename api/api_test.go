package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStart(t *testing.T) {
	t.Parallel()
	b := setup(t)
	input := map[string]any{"input": map[string]any{"user_id": 42}}

	t.Run("KeyedFreshThenReplay", func(t *testing.T) {
		first := b.do(t, "POST", "/workflows/onboarding/start", input, "Idempotency-Key", "webhook-evt-abc123")
		require.Equal(t, http.StatusCreated, first.Status, "%s", first.Raw)
		require.Equal(t, true, first.Body["started_fresh"])
		require.Equal(t, false, first.Body["deduplicated"])
		again := b.do(t, "POST", "/workflows/onboarding/start", input, "Idempotency-Key", "webhook-evt-abc123")
		require.Equal(t, http.StatusOK, again.Status)
		require.Equal(t, first.Body["execution_id"], again.Body["execution_id"])
		require.Equal(t, false, again.Body["started_fresh"])
		require.Equal(t, true, again.Body["deduplicated"])
	})

	t.Run("BodyKeyAndHeaderWins", func(t *testing.T) {
		first := b.do(t, "POST", "/workflows/onboarding/start", map[string]any{"idempotency_key": "body-k"})
		require.Equal(t, http.StatusCreated, first.Status)
		viaBody := b.do(t, "POST", "/workflows/onboarding/start", map[string]any{"idempotency_key": "body-k"})
		require.Equal(t, http.StatusOK, viaBody.Status)
		require.Equal(t, first.Body["execution_id"], viaBody.Body["execution_id"])
		h := b.do(t, "POST", "/workflows/onboarding/start", map[string]any{"idempotency_key": "other"}, "Idempotency-Key", "body-k")
		require.Equal(t, http.StatusOK, h.Status)
		require.Equal(t, first.Body["execution_id"], h.Body["execution_id"], "the header key wins")
	})

	t.Run("MalformedBodyWithCommittedHeaderKeyReplays", func(t *testing.T) {
		first := b.do(t, "POST", "/workflows/onboarding/start", input, "Idempotency-Key", "mal-1")
		require.Equal(t, http.StatusCreated, first.Status)
		for _, body := range []string{`{"input": `, `{"input": 1, "nope": 2}`, `[1,2]`, `{"workflow_id": 5}`} {
			r := b.do(t, "POST", "/workflows/onboarding/start", body, "Idempotency-Key", "mal-1")
			require.Equal(t, http.StatusOK, r.Status, body)
			require.Equal(t, first.Body["execution_id"], r.Body["execution_id"], body)
			require.Equal(t, true, r.Body["deduplicated"])
		}
		big := b.do(t, "POST", "/workflows/onboarding/start", strings.Repeat(" ", 70<<10), "Idempotency-Key", "mal-1")
		require.Equal(t, http.StatusOK, big.Status, "an oversized body still replays")
		r := b.do(t, "POST", "/workflows/onboarding/start", `{"input": `, "Idempotency-Key", "never-used")
		requireError(t, r, http.StatusBadRequest, codeInvalidJSON)
		r = b.do(t, "POST", "/workflows/onboarding/start", `{"input": `)
		requireError(t, r, http.StatusBadRequest, codeInvalidJSON)
	})

	t.Run("ReplayBypassesValidation", func(t *testing.T) {
		first := b.do(t, "POST", "/workflows/onboarding/start", input, "Idempotency-Key", "val-1")
		require.Equal(t, http.StatusCreated, first.Status)
		r := b.do(t, "POST", "/workflows/onboarding/start", map[string]any{"reuse_policy": "bogus", "throttle": "1/s"}, "Idempotency-Key", "val-1")
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	})

	t.Run("BadKeys", func(t *testing.T) {
		requireError(t, b.do(t, "POST", "/workflows/onboarding/start", input, "Idempotency-Key", ""), http.StatusBadRequest, codeInvalidArgument)
		requireError(t, b.do(t, "POST", "/workflows/onboarding/start", map[string]any{"idempotency_key": ""}), http.StatusBadRequest, codeInvalidArgument)
		r := b.do(t, "POST", "/workflows/onboarding/start", map[string]any{"throttle": "10/s"}, "Idempotency-Key", "thr")
		requireError(t, r, http.StatusBadRequest, codeInvalidArgument)
		require.Contains(t, r.Body["error"], "throttle")
		r = b.do(t, "POST", "/workflows/onboarding/start", map[string]any{"idempotency_key": "x", "batch_key": "b"})
		requireError(t, r, http.StatusBadRequest, codeInvalidArgument)
	})

	t.Run("UnkeyedStartHasNoDedupFields", func(t *testing.T) {
		r := b.do(t, "POST", "/workflows/onboarding/start", input)
		require.Equal(t, http.StatusCreated, r.Status)
		require.NotContains(t, r.Body, "started_fresh")
		require.NotContains(t, r.Body, "deduplicated")
		r = b.do(t, "POST", "/workflows/onboarding/start", map[string]any{"conflict_policy": "use_existing"})
		require.Contains(t, r.Body, "started_fresh", "conflict_policy adds started_fresh")
		require.NotContains(t, r.Body, "deduplicated")
	})

	t.Run("ClientMistakes", func(t *testing.T) {
		requireError(t, b.do(t, "POST", "/workflows/nope/start", input), http.StatusNotFound, codeUnknownWorkflow)
		requireError(t, b.do(t, "POST", "/workflows/onboarding/start", map[string]any{"inputs": 1}), http.StatusBadRequest, codeInvalidJSON)
		r := b.do(t, "POST", "/workflows/onboarding/start", map[string]any{"workflow_id": 12})
		requireError(t, r, http.StatusBadRequest, codeInvalidJSON)
		require.Contains(t, r.Body["error"], "workflow_id")
		requireError(t, b.do(t, "POST", "/workflows/onboarding/start", map[string]any{"reuse_policy": "sometimes"}), http.StatusBadRequest, codeInvalidArgument)
		requireError(t, b.do(t, "POST", "/workflows/onboarding/start", `{"input": "a\u0000b"}`), http.StatusBadRequest, codeInvalidJSON)
		require.Equal(t, http.StatusCreated, b.do(t, "POST", "/workflows/onboarding/start", `{"input": "a\\u0000b"}`).Status, "an escaped backslash is fine")
		requireError(t, b.do(t, "POST", "/workflows/onboarding/start", strings.Repeat("x", 70<<10)), http.StatusRequestEntityTooLarge, codeTooLarge)
		requireError(t, b.do(t, "POST", "/workflows/onboarding/start", map[string]any{"workflow_id": "a\x01"}), http.StatusBadRequest, codeInvalidArgument)
		requireError(t, b.do(t, "GET", "/workflows/onboarding/start", nil), http.StatusMethodNotAllowed, codeMethod)
		requireError(t, b.do(t, "GET", "/nothing", nil), http.StatusNotFound, codeNoRoute)
	})

	t.Run("ConflictBody", func(t *testing.T) {
		first := b.do(t, "POST", "/workflows/block/start", map[string]any{"workflow_id": "order-9"})
		require.Equal(t, http.StatusCreated, first.Status)
		r := b.do(t, "POST", "/workflows/block/start", map[string]any{"workflow_id": "order-9", "reuse_policy": "reject_duplicate"})
		requireError(t, r, http.StatusConflict, codeConflict)
		require.Equal(t, first.Body["execution_id"], r.Body["existing_execution_id"])
		require.Equal(t, "RUNNING", r.Body["existing_state"])
		att := b.do(t, "POST", "/workflows/block/start", map[string]any{"workflow_id": "order-9"})
		require.Equal(t, http.StatusOK, att.Status, "allow_duplicate attaches")
	})

	t.Run("FiftyConcurrentSameKey", func(t *testing.T) {
		const n = 50
		ids := make([]string, n)
		statuses := make([]int, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				r := b.do(t, "POST", "/workflows/onboarding/start", input, "Idempotency-Key", "burst")
				ids[i], statuses[i] = fmt.Sprint(r.Body["execution_id"]), r.Status
			})
		}
		wg.Wait()
		created := 0
		for i := range n {
			require.Equal(t, ids[0], ids[i])
			if statuses[i] == http.StatusCreated {
				created++
			}
		}
		require.Equal(t, 1, created)
	})
}

func TestSignalRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	run := b.do(t, "POST", "/workflows/order/start", map[string]any{"input": map[string]any{"order_id": "o", "sleep_ms": 10}})
	require.Equal(t, http.StatusCreated, run.Status)
	id := run.Body["execution_id"].(string)
	sig := "/workflows/" + id + "/signal/approved"

	t.Run("DedupHeaderQueryAndPrecedence", func(t *testing.T) {
		r := b.do(t, "POST", sig+"?idempotency_key=q1", map[string]any{"by": "q"})
		require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Raw)
		require.Equal(t, true, r.Body["signal_delivered"])
		r = b.do(t, "POST", sig+"?idempotency_key=q1", map[string]any{"by": "q"})
		require.Equal(t, false, r.Body["signal_delivered"])
		r = b.do(t, "POST", sig+"?idempotency_key=new-one", map[string]any{"by": "q"}, "Idempotency-Key", "q1")
		require.Equal(t, http.StatusAccepted, r.Status)
		require.Equal(t, false, r.Body["signal_delivered"], "the header wins over the query")
	})

	t.Run("Mistakes", func(t *testing.T) {
		requireError(t, b.do(t, "POST", "/workflows/not-a-uuid/signal/approved", nil), http.StatusBadRequest, codeInvalidArgument)
		requireError(t, b.do(t, "POST", "/workflows/0000aaaa-0000-4000-8000-000000000000/signal/approved", nil), http.StatusNotFound, codeNotFound)
		requireError(t, b.do(t, "POST", sig, `{"by":`), http.StatusBadRequest, codeInvalidJSON)
		requireError(t, b.do(t, "POST", sig, nil, "Idempotency-Key", ""), http.StatusBadRequest, codeInvalidArgument)
		requireError(t, b.do(t, "POST", sig+"?idempotency_key=", nil), http.StatusBadRequest, codeInvalidArgument)
	})

	t.Run("TerminalCarveOut", func(t *testing.T) {
		res := b.do(t, "GET", "/workflows/"+id+"/result?wait=20s", nil)
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
		require.Equal(t, "COMPLETED", res.Body["state"])
		r := b.do(t, "POST", sig, nil, "Idempotency-Key", "q1")
		require.Equal(t, http.StatusAccepted, r.Status)
		require.Equal(t, false, r.Body["signal_delivered"])
		requireError(t, b.do(t, "POST", sig, nil, "Idempotency-Key", "fresh"), http.StatusConflict, codeTerminal)
		requireError(t, b.do(t, "POST", sig, nil), http.StatusConflict, codeTerminal)
	})

	t.Run("SignalWithStart", func(t *testing.T) {
		body := map[string]any{"workflow_id": "sws-1", "signal_name": "go", "signal_payload": "now", "idempotency_key": "evt-1"}
		first := b.do(t, "POST", "/workflows/block/signal-with-start", body)
		require.Equal(t, http.StatusCreated, first.Status, "%s", first.Raw)
		require.Equal(t, true, first.Body["signal_delivered"])
		again := b.do(t, "POST", "/workflows/block/signal-with-start", body)
		require.Equal(t, http.StatusOK, again.Status)
		require.Equal(t, false, again.Body["signal_delivered"])
		require.Equal(t, first.Body["execution_id"], again.Body["execution_id"])
		requireError(t, b.do(t, "POST", "/workflows/block/signal-with-start", map[string]any{"signal_name": "go"}), http.StatusBadRequest, codeInvalidArgument)
		requireError(t, b.do(t, "POST", "/workflows/nope/signal-with-start", map[string]any{"workflow_id": "x", "signal_name": "go"}), http.StatusNotFound, codeUnknownWorkflow)
	})
}

func TestReadAndCloseRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	run := b.do(t, "POST", "/workflows/block/start", map[string]any{"workflow_id": "r1", "input": "x"})
	id := run.Body["execution_id"].(string)

	d := b.do(t, "GET", "/workflows/"+id, nil)
	require.Equal(t, http.StatusOK, d.Status)
	require.Equal(t, "RUNNING", d.Body["execution"].(map[string]any)["state"])
	require.Contains(t, d.Body["history_endpoint"], id)

	r := b.do(t, "GET", "/workflows/"+id+"/result?wait=0.05", nil)
	require.Equal(t, http.StatusNoContent, r.Status)
	require.Equal(t, "1", r.Header.Get("Retry-After"))
	requireError(t, b.do(t, "GET", "/workflows/"+id+"/result?wait=soon", nil), http.StatusBadRequest, codeInvalidArgument)

	require.Equal(t, http.StatusAccepted, b.do(t, "POST", "/workflows/"+id+"/signal/unrelated", "1").Status)
	h := b.do(t, "GET", "/workflows/"+id+"/history?limit=1", nil)
	require.Equal(t, http.StatusOK, h.Status)
	require.Len(t, h.Body["events"], 1)
	require.Equal(t, float64(0), h.Body["next_cursor"])
	requireError(t, b.do(t, "GET", "/workflows/"+id+"/history?limit=5000", nil), http.StatusBadRequest, codeInvalidArgument)
	requireError(t, b.do(t, "GET", "/workflows/"+id+"/history?after=-3", nil), http.StatusBadRequest, codeInvalidArgument)

	l := b.do(t, "GET", "/workflows?workflow_id=r1&state=running", nil)
	require.Equal(t, http.StatusOK, l.Status, "%s", l.Raw)
	require.Len(t, l.Body["workflows"], 1)
	requireError(t, b.do(t, "GET", "/workflows?state=sleeping", nil), http.StatusBadRequest, codeInvalidArgument)
	requireError(t, b.do(t, "GET", "/workflows?page_size=0", nil), http.StatusBadRequest, codeInvalidArgument)
	requireError(t, b.do(t, "GET", "/workflows?cursor=garbage!", nil), http.StatusBadRequest, codeInvalidArgument)

	c := b.do(t, "POST", "/workflows/"+id+"/cancel", map[string]any{"reason": "no longer needed"})
	require.Equal(t, http.StatusOK, c.Status, "%s", c.Raw)
	require.Equal(t, true, c.Body["newly_cancelled"])
	requireError(t, b.do(t, "POST", "/workflows/"+id+"/cancel", nil), http.StatusConflict, codeTerminal)
	tr := b.do(t, "POST", "/workflows/"+id+"/terminate", nil)
	require.Equal(t, http.StatusAccepted, tr.Status)
	require.Equal(t, false, tr.Body["newly_terminated"])
	requireError(t, b.do(t, "POST", "/workflows/"+id+"/terminate", map[string]any{"why": 1}), http.StatusBadRequest, codeInvalidJSON)
}

func TestHealth(t *testing.T) {
	t.Parallel()
	b := setup(t)
	base := strings.TrimSuffix(b.url, BasePath)
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		res, err := http.Get(base + path)
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode, path)
	}
	b.engine.Stop()
	res, err := http.Get(base + "/readyz")
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, res.StatusCode)
}

// TestOpenAPIMatchesRoutes checks the served document names exactly the
// registered routes.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.do(t, "GET", "/openapi.json", nil)
	require.Equal(t, http.StatusOK, r.Status)
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(r.Raw, &doc))
	require.Equal(t, "3.0.3", doc.OpenAPI)
	param := regexp.MustCompile(`\{[^}]+\}|:[a-z_]+`)
	var documented []string
	for path, ops := range doc.Paths {
		for method := range ops {
			documented = append(documented, strings.ToUpper(method)+" "+param.ReplaceAllString(path, "{}"))
		}
	}
	var served []string
	for _, route := range b.server.Routes() {
		served = append(served, param.ReplaceAllString(route, "{}"))
	}
	sort.Strings(documented)
	sort.Strings(served)
	require.Equal(t, served, documented)
}

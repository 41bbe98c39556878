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
	"time"

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
	require.Equal(t, "RUNNING", c.Body["state"], "a cancel is answered once it is recorded")
	res := b.do(t, "GET", "/workflows/"+id+"/result?wait=20s", nil)
	require.Equal(t, "CANCELLED", res.Body["state"], "%s", res.Raw)
	requireError(t, b.do(t, "POST", "/workflows/"+id+"/cancel", nil), http.StatusConflict, codeTerminal)
	tr := b.do(t, "POST", "/workflows/"+id+"/terminate", nil)
	require.Equal(t, http.StatusAccepted, tr.Status)
	require.Equal(t, false, tr.Body["newly_terminated"])
	requireError(t, b.do(t, "POST", "/workflows/"+id+"/terminate", map[string]any{"why": 1}), http.StatusBadRequest, codeInvalidJSON)
}

func TestCooperativeCancel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	run := b.do(t, "POST", "/workflows/linger/start", map[string]any{"input": "x"})
	require.Equal(t, http.StatusCreated, run.Status, "%s", run.Raw)
	id := run.Body["execution_id"].(string)
	cancel := "/workflows/" + id + "/cancel"

	t.Run("AnswerAndRepeat", func(t *testing.T) {
		first := b.do(t, "POST", cancel, map[string]any{"reason": "user asked"})
		require.Equal(t, http.StatusOK, first.Status, "%s", first.Raw)
		require.Equal(t, map[string]any{"ok": true, "execution_id": id, "state": "RUNNING", "reason": "user asked",
			"cancel_requested": true, "newly_cancelled": true}, first.Body)
		again := b.do(t, "POST", cancel, nil)
		require.Equal(t, http.StatusOK, again.Status, "%s", again.Raw)
		require.Equal(t, false, again.Body["newly_cancelled"])
		require.Equal(t, true, again.Body["cancel_requested"])
		require.Equal(t, "RUNNING", again.Body["state"])
	})

	t.Run("ClosedRunIsAConflict", func(t *testing.T) {
		require.Equal(t, http.StatusAccepted, b.do(t, "POST", "/workflows/"+id+"/signal/go", `"now"`).Status)
		res := b.do(t, "GET", "/workflows/"+id+"/result?wait=20s", nil)
		require.Equal(t, "CANCELLED", res.Body["state"], "%s", res.Raw)
		requireError(t, b.do(t, "POST", cancel, nil), http.StatusConflict, codeTerminal)
		h := b.do(t, "GET", "/workflows/"+id+"/history", nil)
		var types []string
		for _, ev := range h.Body["events"].([]any) {
			types = append(types, ev.(map[string]any)["type"].(string))
		}
		require.Equal(t, []string{"WorkflowStarted", "WorkflowCancelRequested", "SignalReceived", "WorkflowCancelled"}, types)
	})
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
	param := regexp.MustCompile(`\{[^}]+\}|[:*][a-z_]+`)
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

// TestHostileInput: values PostgreSQL cannot store are a 400 naming the
// field, never a 500, and change nothing.
func TestHostileInput(t *testing.T) {
	t.Parallel()
	b := setup(t)
	run := b.do(t, "POST", "/workflows/block/start", map[string]any{"workflow_id": "hostile"})
	require.Equal(t, http.StatusCreated, run.Status, "%s", run.Raw)
	id := run.Body["execution_id"].(string)
	digits := "0." + strings.Repeat("1", 20_000) // more than numeric's 16383 digits after the point

	for _, c := range []struct {
		name, method, path, body, field string
		code                            string
	}{
		{"StartInputHugeExponent", "POST", "/workflows/block/start", `{"input": 1e999999}`, "input", codeInvalidJSON},
		{"StartInputTooManyDigits", "POST", "/workflows/block/start", `{"input": ` + digits + `}`, "input", codeInvalidJSON},
		{"StartInputLoneSurrogate", "POST", "/workflows/block/start", `{"input": {"a": "\ud800"}}`, "input.a", codeInvalidJSON},
		{"StartMemoU0000", "POST", "/workflows/block/start", `{"memo": {"note": "a\u0000"}}`, "memo.note", codeInvalidJSON},
		{"StartMemoHugeExponent", "POST", "/workflows/block/start", `{"memo": [1e-999999]}`, "memo[0]", codeInvalidJSON},
		{"StartCallbackHeaderU0000", "POST", "/workflows/block/start",
			`{"completion_callbacks": [{"url": "https://example.com/", "headers": {"X": "\u0000"}}]}`, "completion_callbacks[0].headers.X", codeInvalidJSON},
		{"SignalPayloadLoneSurrogate", "POST", "/workflows/" + id + "/signal/s", `{"by": "\udfff"}`, "body.by", codeInvalidJSON},
		{"SignalPayloadHugeNumber", "POST", "/workflows/" + id + "/signal/s", `1e999999`, "body", codeInvalidJSON},
		{"SignalPayloadU0000", "POST", "/workflows/" + id + "/signal/s", `"\u0000"`, "body", codeInvalidJSON},
		{"SignalWithStartPayloadLoneSurrogate", "POST", "/workflows/block/signal-with-start",
			`{"workflow_id": "sws-h", "signal_name": "go", "signal_payload": "\ud800"}`, "signal_payload", codeInvalidJSON},
		{"SignalWithStartPayloadHugeNumber", "POST", "/workflows/block/signal-with-start",
			`{"workflow_id": "sws-h", "signal_name": "go", "signal_payload": ` + digits + `}`, "signal_payload", codeInvalidJSON},
		{"SignalWithStartInputU0000", "POST", "/workflows/block/signal-with-start",
			`{"workflow_id": "sws-h", "signal_name": "go", "input": "\u0000"}`, "input", codeInvalidJSON},
		{"ListWorkflowNameNUL", "GET", "/workflows?workflow_name=%00", "", "workflow_name", codeInvalidArgument},
		{"ListWorkflowIDInvalidUTF8", "GET", "/workflows?workflow_id=%ff", "", "workflow_id", codeInvalidArgument},
		{"ListWorkflowNameTooLong", "GET", "/workflows?workflow_name=" + strings.Repeat("n", 10_000), "", "workflow_name", codeInvalidArgument},
		{"HistoryEventTypeNUL", "GET", "/workflows/" + id + "/history?event_type=%00", "", "event_type", codeInvalidArgument},
		{"HistoryEventTypeInvalidUTF8", "GET", "/workflows/" + id + "/history?event_type=WorkflowStarted&event_type=%ff", "", "event_type", codeInvalidArgument},
		{"OpenGateNUL", "DELETE", "/admin/gates/%00", "", "gate_id", codeInvalidArgument},
		{"OpenGateInvalidUTF8", "DELETE", "/admin/gates/%ff", "", "gate_id", codeInvalidArgument},
		{"ProbeWorkflowNameNUL", "GET", "/internal/shards/3/probe?workflow_name=%00&idempotency_key=k", "", "workflow_name", codeInvalidArgument},
		{"ProbeKeyInvalidUTF8", "GET", "/internal/shards/3/probe?workflow_name=w&idempotency_key=%ff", "", "idempotency_key", codeInvalidArgument},
		{"ClaimEpochOverBigint", "POST", "/internal/shards/3/claim",
			`{"workflow_name": "w", "idempotency_key": "k", "epoch": 18446744073709551615, "target_shard": 1}`, "epoch", codeInvalidArgument},
		{"ClaimNameTooLong", "POST", "/internal/shards/3/claim",
			`{"workflow_name": "` + strings.Repeat("w", 30_000) + `", "idempotency_key": "k", "epoch": 1, "target_shard": 1}`, "workflow_name", codeInvalidArgument},
		{"ClaimKeyNUL", "POST", "/internal/shards/3/claim",
			`{"workflow_name": "w", "idempotency_key": "\u0000", "epoch": 1, "target_shard": 1}`, "idempotency_key", codeInvalidJSON},
		{"StartNameInvalidUTF8", "POST", "/workflows/%ff/start", "{}", "workflow name", codeInvalidArgument},
		{"SignalNameNUL", "POST", "/workflows/" + id + "/signal/%00", "{}", "signal name", codeInvalidArgument},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := b.counts(t)
			var body any
			if c.body != "" {
				body = c.body
			}
			var headers []string
			if strings.HasPrefix(c.path, "/internal/") {
				headers = nodeHeaders(c.method, c.path, body)
			}
			r := b.do(t, c.method, c.path, body, headers...)
			requireError(t, r, http.StatusBadRequest, c.code)
			require.Contains(t, r.Body["error"], c.field)
			require.Equal(t, before, b.counts(t), "a rejected request changed data")
		})
	}
}

func TestStartTimeouts(t *testing.T) {
	t.Parallel()
	b := setup(t)

	t.Run("DescribeShowsTheDeadline", func(t *testing.T) {
		run := b.do(t, "POST", "/workflows/block/start", map[string]any{"input": "x", "execution_timeout": "1h", "run_timeout": 7200})
		require.Equal(t, http.StatusCreated, run.Status, "%s", run.Raw)
		d := b.do(t, "GET", "/workflows/"+run.Body["execution_id"].(string), nil)
		x := d.Body["execution"].(map[string]any)
		exec, err := time.Parse(time.RFC3339Nano, x["execution_deadline"].(string))
		require.NoError(t, err)
		runDL, err := time.Parse(time.RFC3339Nano, x["run_deadline"].(string))
		require.NoError(t, err)
		require.Equal(t, time.Hour, runDL.Sub(exec))
	})

	t.Run("BadValuesAre400", func(t *testing.T) {
		requireError(t, b.do(t, "POST", "/workflows/block/start", map[string]any{"execution_timeout": "soon"}), http.StatusBadRequest, codeInvalidArgument)
		requireError(t, b.do(t, "POST", "/workflows/block/start", map[string]any{"run_timeout": "-1s"}), http.StatusBadRequest, codeInvalidArgument)
	})
}

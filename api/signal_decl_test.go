package api

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDeclaredSignals: the approval workflow declares "approved" ({"by":
// string}); the routes refuse other names and payloads, writing nothing.
func TestDeclaredSignals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// Delayed an hour: no task runs, so the counts move only by signals.
	held := b.do(t, "POST", "/workflows/approval/start", map[string]any{"workflow_id": "held", "delay": "1h"})
	require.Equal(t, http.StatusCreated, held.Status, "%s", held.Raw)
	sig := "/workflows/" + held.Body["execution_id"].(string) + "/signal/"
	sws := "/workflows/approval/signal-with-start"

	for _, tc := range []struct {
		name, path string
		body       any
		status     int
		code       string
		inMessage  string
	}{
		{"SignalUnknownName", sig + "aproved", map[string]any{"by": "ann"}, http.StatusNotFound, codeUnknownSignal, `"aproved"`},
		{"SignalPayloadOfAnotherType", sig + "approved", `"ann"`, http.StatusUnprocessableEntity, codeInvalidPayload, "cannot unmarshal string"},
		{"SignalFieldOfAnotherType", sig + "approved", map[string]any{"by": 5}, http.StatusUnprocessableEntity, codeInvalidPayload, "by"},
		{"SignalWithStartUnknownNameNewID", sws, map[string]any{"workflow_id": "new", "signal_name": "nope"}, http.StatusNotFound, codeUnknownSignal, `"nope"`},
		{"SignalWithStartBadPayloadNewID", sws, map[string]any{"workflow_id": "new", "signal_name": "approved", "signal_payload": []int{1}},
			http.StatusUnprocessableEntity, codeInvalidPayload, `signal "approved"`},
		{"SignalWithStartUnknownNameRunningID", sws, map[string]any{"workflow_id": "held", "signal_name": "nope"}, http.StatusNotFound, codeUnknownSignal, `"nope"`},
		{"SignalWithStartBadPayloadRunningID", sws, map[string]any{"workflow_id": "held", "signal_name": "approved", "signal_payload": 1},
			http.StatusUnprocessableEntity, codeInvalidPayload, "number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := b.counts(t)
			r := b.do(t, "POST", tc.path, tc.body, "Idempotency-Key", "k-"+tc.name)
			requireError(t, r, tc.status, tc.code)
			require.Contains(t, r.Body["error"], tc.inMessage)
			require.NotEmpty(t, r.Body["signal_name"])
			require.Equal(t, before, b.counts(t), "a refused signal wrote nothing")
		})
	}

	t.Run("KeyedRetryOfADeliveredSignalIsADuplicate", func(t *testing.T) {
		run := b.do(t, "POST", "/workflows/approval/start", map[string]any{"workflow_id": "retried"})
		id := run.Body["execution_id"].(string)
		first := b.do(t, "POST", "/workflows/"+id+"/signal/approved", map[string]any{"by": "ann"}, "Idempotency-Key", "k1")
		require.Equal(t, http.StatusAccepted, first.Status, "%s", first.Raw)
		res := b.do(t, "GET", "/workflows/"+id+"/result?wait=20s", nil)
		require.Equal(t, "COMPLETED", res.Body["state"], "%s", res.Raw)
		before := b.counts(t)
		again := b.do(t, "POST", "/workflows/"+id+"/signal/undeclared", `"not an approval"`, "Idempotency-Key", "k1")
		require.Equal(t, http.StatusAccepted, again.Status, "%s", again.Raw)
		require.Equal(t, false, again.Body["signal_delivered"])
		require.Equal(t, before, b.counts(t))

		body := map[string]any{"workflow_id": "retried", "signal_name": "approved", "signal_payload": map[string]any{"by": "bo"}}
		sw := b.do(t, "POST", sws, body, "Idempotency-Key", "sws-k")
		require.Equal(t, http.StatusCreated, sw.Status, "%s", sw.Raw)
		res = b.do(t, "GET", "/workflows/"+sw.Body["execution_id"].(string)+"/result?wait=20s", nil)
		require.Equal(t, "COMPLETED", res.Body["state"], "%s", res.Raw)
		before = b.counts(t)
		body["signal_name"] = "undeclared"
		sw = b.do(t, "POST", sws, body, "Idempotency-Key", "sws-k")
		require.Equal(t, http.StatusOK, sw.Status, "%s", sw.Raw)
		require.Equal(t, false, sw.Body["signal_delivered"])
		require.Equal(t, before, b.counts(t))
	})

	t.Run("UndeclaringWorkflowAcceptsAnyName", func(t *testing.T) {
		run := b.do(t, "POST", "/workflows/block/start", map[string]any{"workflow_id": "open"})
		r := b.do(t, "POST", "/workflows/"+run.Body["execution_id"].(string)+"/signal/anything", map[string]any{"x": 1})
		require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Raw)
	})
}

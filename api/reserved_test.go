package api

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReservedKeys(t *testing.T) {
	b := setup(t)
	run := b.do(t, "POST", "/workflows/block/start", map[string]any{"workflow_id": "reserved"})
	require.Equal(t, http.StatusCreated, run.Status, "%s", run.Raw)
	id := run.Body["execution_id"].(string)
	sws := map[string]any{"workflow_id": "reserved-sws", "signal_name": "go", "signal_payload": "x"}
	for _, c := range []struct {
		name, path string
		body       any
		headers    []string
	}{
		{"StartHeader", "/workflows/noop_chain/start", map[string]any{}, []string{"Idempotency-Key", "hv:child:x:1"}},
		{"StartBody", "/workflows/noop_chain/start", map[string]any{"idempotency_key": "hv:child:x:2"}, nil},
		{"SignalHeader", "/workflows/" + id + "/signal/go", "x", []string{"Idempotency-Key", "hv:signal:x:1"}},
		{"SignalQuery", "/workflows/" + id + "/signal/go?idempotency_key=hv:signal:x:2", "x", nil},
		{"SignalWithStartHeader", "/workflows/block/signal-with-start", sws, []string{"Idempotency-Key", "hv:sws:1"}},
		{"SignalWithStartBody", "/workflows/block/signal-with-start", map[string]any{"workflow_id": "reserved-sws",
			"signal_name": "go", "signal_payload": "x", "idempotency_key": "hv:sws:2"}, nil},
		{"SignalName", "/workflows/" + id + "/signal/hv:child_closed", map[string]any{"command_id": "1"}, nil},
		{"SignalWithStartName", "/workflows/block/signal-with-start", map[string]any{"workflow_id": "reserved-sws",
			"signal_name": "hv:child_closed", "signal_payload": "x"}, nil},
		{"KeeperSignal", "/workflows/" + id + "/signal/hv:flow_acquire", map[string]any{"chain": "c", "max": 1000}, nil},
		{"StartSystemWorkflow", "/workflows/hv.flow.keeper/start", map[string]any{"workflow_id": "hv:flow:export/acme"}, nil},
		{"SignalWithStartSystemWorkflow", "/workflows/hv.flow.keeper/signal-with-start", map[string]any{"workflow_id": "k",
			"signal_name": "go", "signal_payload": "x"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := b.counts(t)
			r := b.do(t, "POST", c.path, c.body, c.headers...)
			requireError(t, r, http.StatusBadRequest, codeInvalidArgument)
			require.Contains(t, r.Body["error"], "reserved")
			require.Equal(t, before, b.counts(t), "nothing recorded")
		})
	}
	t.Run("ALookAlikeIsAClientKey", func(t *testing.T) {
		r := b.do(t, "POST", "/workflows/noop_chain/start", map[string]any{"input": map[string]any{"activities": 0}}, "Idempotency-Key", "HV:child")
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
	})
	t.Run("AnotherNodeMayUseThem", func(t *testing.T) {
		path := "/workflows/noop_chain/start"
		body := map[string]any{"input": map[string]any{"activities": 0}}
		r := b.do(t, "POST", path, body, nodeHeaders(http.MethodPost, path, body, "Idempotency-Key", "hv:child:x:3")...)
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
	})
}

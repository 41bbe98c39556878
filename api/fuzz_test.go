package api

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine"
)

// sinkWF never completes: signals only buffer, and a cancel request only
// moves its wait to a disconnected context, so fuzzed requests are the
// only writers and a rejected one must leave every count unchanged.
var sinkWF = harvest.NewWorkflow("sink", func(ctx harvest.Context, _ any) (string, error) {
	never := harvest.NewSignal[string]("sink-never-sent-7f3a")
	v, err := never.Receive(ctx)
	if errors.Is(err, harvest.ErrCanceled) {
		return never.Receive(harvest.NewDisconnectedContext(ctx))
	}
	return v, err
})

// fuzzBundle is a server whose only workflow is sink.
func fuzzBundle(f *testing.F) (*testBundle, string) {
	b := setup(f)
	reg := b.engine.Registry()
	require.NoError(f, reg.Register(sinkWF))
	res, err := b.engine.StartWorkflow(context.Background(), engine.StartRequest{WorkflowName: "sink", WorkflowID: "fuzz-target"})
	require.NoError(f, err)
	return b, res.ExecutionID.String()
}

// checkFuzzed asserts the invariants of any fuzzed mutating request: no
// 5xx, the JSON error shape on 4xx, and no data change when rejected.
func checkFuzzed(t *testing.T, b *testBundle, before [4]int, r response) {
	require.Less(t, r.Status, 500, "server error for client input: %s", r.Raw)
	if r.Status >= 400 {
		require.NotEmpty(t, r.Body["code"], "%s", r.Raw)
		require.NotEmpty(t, r.Body["error"], "%s", r.Raw)
		require.Equal(t, before, b.counts(t), "a rejected request changed data")
	}
}

func addBodySeeds(f *testing.F, extra ...string) {
	for _, s := range append([]string{"", "{}", `{"input": {"user_id": 42}}`, `{"input": `, "[]", "null", `"x"`,
		`{"input": "\u0000"}`, `{"workflow_id": 1}`, `{"unknown": true}`, `{"idempotency_key": ""}`, `{"throttle": "1/s"}`,
		"\xff\xfe", `{"reuse_policy": "reject_duplicate", "workflow_id": "fuzz-target"}`, `{"memo": {"a": [1, 2]}}`,
		`{"input": 1e999999}`, `{"input": "\ud800"}`, `{"memo": {"k": "\u0000"}}`, `{"signal_payload": -1e-999999}`, `"\udc00"`}, extra...) {
		f.Add([]byte(s), "k")
	}
}

func FuzzStart(f *testing.F) {
	b, _ := fuzzBundle(f)
	addBodySeeds(f)
	f.Add([]byte(`{"input": 1}`), "")
	f.Fuzz(func(t *testing.T, body []byte, key string) {
		before := b.counts(t)
		var headers []string
		if key != "" {
			headers = []string{"Idempotency-Key", key}
		}
		checkFuzzed(t, b, before, b.doRaw(t, "POST", "/workflows/sink/start", body, headers...))
	})
}

func FuzzSignal(f *testing.F) {
	b, id := fuzzBundle(f)
	addBodySeeds(f, `{"by": "ops"}`, "1", "true")
	f.Fuzz(func(t *testing.T, body []byte, key string) {
		before := b.counts(t)
		checkFuzzed(t, b, before, b.doRaw(t, "POST", "/workflows/"+id+"/signal/approved?idempotency_key="+urlQueryEscape(key), body))
	})
}

func FuzzSignalWithStart(f *testing.F) {
	b, _ := fuzzBundle(f)
	addBodySeeds(f, `{"workflow_id": "w", "signal_name": "s"}`, `{"workflow_id": "fuzz-target", "signal_name": "s", "id_reuse_policy": "reject_duplicate"}`)
	f.Fuzz(func(t *testing.T, body []byte, key string) {
		before := b.counts(t)
		var headers []string
		if key != "" {
			headers = []string{"Idempotency-Key", key}
		}
		checkFuzzed(t, b, before, b.doRaw(t, "POST", "/workflows/sink/signal-with-start", body, headers...))
	})
}

func FuzzCancel(f *testing.F) { fuzzClose(f, "cancel") }

func FuzzTerminate(f *testing.F) { fuzzClose(f, "terminate") }

func fuzzClose(f *testing.F, op string) {
	b, id := fuzzBundle(f)
	addBodySeeds(f, `{"reason": "r"}`, `{"reason": 5}`)
	f.Fuzz(func(t *testing.T, body []byte, idText string) {
		target := id
		if idText != "k" {
			target = urlPathEscape(idText)
		}
		before := b.counts(t)
		r := b.doRaw(t, "POST", "/workflows/"+target+"/"+op, body)
		checkFuzzed(t, b, before, r)
		if r.Status == http.StatusOK || r.Status == http.StatusAccepted {
			require.Equal(t, true, r.Body["ok"])
		}
	})
}

package api

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
)

var pingSig = harvest.NewSignal[string]("ping")

// queryCounterWF counts "ping" signals until "stop"; its queries read it.
var queryCounterWF = harvest.NewWorkflow("query_counter", func(ctx harvest.Context, _ json.RawMessage) (int, error) {
	n := 0
	harvest.SetQueryHandler(ctx, "count", func(struct{}) (int, error) { return n, nil })
	harvest.SetQueryHandler(ctx, "plus", func(k int) (int, error) { return n + k, nil })
	harvest.SetQueryHandler(ctx, "sleepy", func(struct{}) (int, error) { return 0, harvest.Sleep(ctx, time.Second) })
	for {
		v, err := pingSig.Receive(ctx)
		if err != nil || v == "stop" {
			return n, err
		}
		n++
	}
})

func TestQueryHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.do(t, http.MethodPost, "/workflows/query_counter/start", map[string]any{})
	require.Equal(t, http.StatusCreated, r.Status, "body %s", r.Raw)
	id := r.Body["execution_id"].(string)
	for range 2 {
		r = b.do(t, http.MethodPost, "/workflows/"+id+"/signal/ping", `"x"`)
		require.Less(t, r.Status, 300, "body %s", r.Raw)
	}
	r = b.do(t, http.MethodGet, "/workflows/"+id+"/query/count", nil)
	require.Equal(t, http.StatusOK, r.Status, "body %s", r.Raw)
	require.Equal(t, map[string]any{"execution_id": id, "query": "count", "result": 2.0}, r.Body)
	r = b.do(t, http.MethodPost, "/workflows/"+id+"/query/plus", map[string]any{"args": 40})
	require.Equal(t, http.StatusOK, r.Status, "body %s", r.Raw)
	require.Equal(t, 42.0, r.Body["result"])
	requireError(t, b.do(t, http.MethodGet, "/workflows/"+id+"/query/nope", nil), http.StatusNotFound, codeUnknownQuery)
	requireError(t, b.do(t, http.MethodGet, "/workflows/"+id+"/query/sleepy", nil), http.StatusBadRequest, codeQueryCommand)
	requireError(t, b.do(t, http.MethodPost, "/workflows/"+id+"/query/plus", `{"args":"a"}`), http.StatusBadRequest, codeInvalidArgument)
	requireError(t, b.do(t, http.MethodPost, "/workflows/"+id+"/query/plus", `{`), http.StatusBadRequest, codeInvalidJSON)

	r = b.do(t, http.MethodPost, "/workflows/"+id+"/signal/ping", `"stop"`)
	require.Less(t, r.Status, 300, "body %s", r.Raw)
	r = b.do(t, http.MethodGet, "/workflows/"+id+"/result?wait=20s", nil)
	require.Equal(t, http.StatusOK, r.Status, "body %s", r.Raw)
	r = b.do(t, http.MethodGet, "/workflows/"+id+"/query/count", nil)
	require.Equal(t, http.StatusOK, r.Status, "body %s", r.Raw)
	require.Equal(t, 2.0, r.Body["result"])
}

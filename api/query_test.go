package api

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

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

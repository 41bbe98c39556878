package ui

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/internal/browsertest"
)

// A GET answered 503 (a node whose token table may trail the leader's)
// is sent again after its Retry-After; a POST answered 503 is not, since
// its work may have been done.
func TestCallRetriesReadsOn503(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	mux := http.NewServeMux()
	mux.Handle("/ui/", Handler("/ui/"))
	mux.HandleFunc("/api/harvest/probe", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.Method]++
		n := seen[r.Method]
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if n <= 2 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":"this node's token table may be out of date; retry, or use another node","code":"unavailable"}`))
			return
		}
		_, _ = w.Write([]byte(`{"ok":true}`))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	b := browsertest.New(t)
	b.Do(chromedp.Navigate(srv.URL + "/ui/"))
	call := func(method string) string {
		return browsertest.Eval[string](b, `import('/ui/js/api.js').then(m => m.call('`+method+`', '/probe'))
			.then(r => 'ok ' + JSON.stringify(r), e => 'error ' + e.status + ' ' + e.code)`, chromedp.EvalAwaitPromise)
	}
	require.Equal(t, `ok {"ok":true}`, call("GET"), "the third GET is answered")
	require.Equal(t, "error 503 unavailable", call("POST"), "a POST's 503 is the caller's")
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, map[string]int{"GET": 3, "POST": 1}, seen)
}

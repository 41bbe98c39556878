package api

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
)

// BenchmarkBatchItems puts keyed starts of noop_chain through the whole
// HTTP handler and a real engine, one op a started run: single starts
// from 32 callers against batch_start items, 100 a batch, from 8 callers,
// side by side (issue 29's goal, in process):
//
//	go test -run '^$' -bench BatchItems -count 5 ./api/
func BenchmarkBatchItems(b *testing.B) {
	tb := setup(b)
	b.Run("single_32", func(b *testing.B) {
		run, n := uuid.NewString(), atomic.Int64{}
		b.SetParallelism(ceilDiv(32, parallelismBase()))
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				req := httptest.NewRequest("POST", BasePath+"/workflows/noop_chain/start",
					strings.NewReader(`{"input":{"activities":0}}`))
				req.Header.Set("Idempotency-Key", run+"-"+strconv.FormatInt(n.Add(1), 10))
				serveExpect(b, tb.server, req, http.StatusCreated)
			}
		})
	})
	b.Run("batch100_8", func(b *testing.B) {
		run, n := uuid.NewString(), atomic.Int64{}
		b.SetParallelism(ceilDiv(8, parallelismBase()))
		batches := ceilDiv(b.N, 100)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				i := n.Add(1)
				if i > int64(batches) {
					continue
				}
				req := httptest.NewRequest("POST", BasePath+"/workflows/batch_start", strings.NewReader(batchOf(run, i, 100)))
				serveExpect(b, tb.server, req, http.StatusOK)
			}
		})
	})
}

// batchOf is a batch of size keyed noop_chain items.
func batchOf(run string, batch int64, size int) string {
	items := make([]map[string]any, size)
	for j := range items {
		items[j] = map[string]any{"workflow_name": "noop_chain", "input": map[string]any{"activities": 0},
			"idempotency_key": run + "-" + strconv.FormatInt(batch, 10) + "-" + strconv.Itoa(j)}
	}
	out, _ := json.Marshal(map[string]any{"items": items})
	return string(out)
}

func serveExpect(b *testing.B, h http.Handler, req *http.Request, status int) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != status || (status == http.StatusOK && strings.Contains(rec.Body.String(), `"status":4`)) {
		b.Errorf("%d %s", rec.Code, rec.Body.String()[:min(300, rec.Body.Len())])
	}
}

// parallelismBase is GOMAXPROCS as RunParallel multiplies it.
func parallelismBase() int { return max(1, runtimeProcs()) }

func ceilDiv(a, b int) int { return (a + b - 1) / b }

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }

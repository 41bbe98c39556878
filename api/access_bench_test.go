package api

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/auth"
)

// BenchmarkKeyedStartAuth runs keyed starts through the whole HTTP
// handler and a real engine with authentication off, with a write token,
// and as a node-signed forwarded request, side by side:
//
//	go test -run '^$' -bench KeyedStartAuth -count 5 ./api/
func BenchmarkKeyedStartAuth(b *testing.B) {
	tb := setup(b)
	full, tok := auth.New(auth.Spec{Scope: auth.ScopeWrite}, time.Now())
	key := []byte(strings.Repeat("k", 32))
	tokens, err := New(Config{Gates: tb.engine, Verifier: auth.NewVerifier(auth.NewTable([]auth.Token{tok})), NodeKey: key}, SingleShard(tb.engine))
	require.NoError(b, err)
	body := `{"input":{"activities":0}}`
	mode := func(name string, h http.Handler, prepare func(*http.Request)) {
		b.Run(name, func(b *testing.B) {
			run := uuid.NewString() // fresh keys in every run of -count
			for i := range b.N {
				req := httptest.NewRequest("POST", BasePath+"/workflows/noop_chain/start", strings.NewReader(body))
				req.Header.Set("Idempotency-Key", run+"-"+strconv.Itoa(i))
				prepare(req)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusCreated {
					b.Fatalf("%d %s", rec.Code, rec.Body)
				}
			}
		})
	}
	mode("off", tb.server, func(*http.Request) {})
	mode("tokens", tokens, func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+full) })
	mode("node", tokens, func(r *http.Request) {
		SignNode(r, NodeSig{Key: key, From: "n2", Identity: auth.Identity{TokenID: tok.ID, Scope: auth.ScopeWrite}, Body: []byte(body), Time: time.Now()})
	})
}

// BenchmarkGuard is the cost of authentication alone (no engine).
func BenchmarkGuard(b *testing.B) {
	full, tok := auth.New(auth.Spec{Scope: auth.ScopeWrite}, time.Now())
	key := []byte(strings.Repeat("k", 32))
	s := &Server{cfg: Config{Verifier: auth.NewVerifier(auth.NewTable([]auth.Token{tok})), NodeKey: key}, now: time.Now}
	off := &Server{cfg: Config{}, now: time.Now}
	for name, c := range map[string]struct {
		s   *Server
		set func(*http.Request)
	}{
		"off":    {off, func(*http.Request) {}},
		"tokens": {s, func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+full) }},
		"node": {s, func(r *http.Request) {
			SignNode(r, NodeSig{Key: key, From: "n2", Identity: auth.Identity{TokenID: tok.ID, Scope: auth.ScopeWrite}, Time: time.Now()})
		}},
	} {
		req := httptest.NewRequest("POST", BasePath+"/workflows/x/start", nil)
		c.set(req)
		b.Run(name, func(b *testing.B) {
			for range b.N {
				ctx := testContext(req)
				if _, err := c.s.authorize(ctx, needWrite); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// testContext is a gin context over req.
func testContext(req *http.Request) *gin.Context {
	gin.SetMode(gin.ReleaseMode)
	c, _ := gin.CreateTestContext(httptest.NewRecorder())
	c.Request = req
	return c
}

// BenchmarkNodeRequest is what a node signature costs a forwarded request
// of each body size, both ends together: the sender's SignNode (v2 hashes
// the body; v1+v2 also signs the old form, --node-auth-v1) and the
// owner's verification and body check as its handler reads the body,
// beside the same request unsigned ("plain": building and reading it).
func BenchmarkNodeRequest(b *testing.B) {
	key := []byte(strings.Repeat("k", 32))
	s := &Server{cfg: Config{NodeKey: key, NodeID: "n1"}, now: time.Now}
	id := auth.Identity{TokenID: uuid.NewString(), Scope: auth.ScopeWrite}
	for _, size := range []int{0, 600, 64 << 10} {
		body := []byte(strings.Repeat("x", size))
		for _, mode := range []string{"plain", "v2", "v1+v2"} {
			b.Run(fmt.Sprintf("%dB/%s", size, mode), func(b *testing.B) {
				b.SetBytes(int64(size))
				for b.Loop() {
					req := httptest.NewRequest("POST", BasePath+"/workflows/x/start", bytes.NewReader(body))
					if mode != "plain" {
						SignNode(req, NodeSig{Key: key, From: "n2", To: "n1", Identity: id, Body: body, Time: time.Now(), V1: mode == "v1+v2"})
						if _, apiErr := s.nodeCaller(req); apiErr != nil {
							b.Fatal(apiErr.msg)
						}
					}
					if _, err := io.Copy(io.Discard, req.Body); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

package api

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/auth"
)

// authBundle is a server with tokens on over the test bundle's engine.
type authBundle struct {
	*testBundle
	tokens map[string]string // credential name → Authorization header
	key    []byte
}

// credentials of the route × scope table.
var credentials = []string{"none", "read", "write", "admin", "expired", "revoked"}

func setupAuth(t *testing.T, opts ...func(*Config, *auth.Table)) *authBundle {
	t.Helper()
	return setupAuthOn(t, setup(t), opts...)
}

// setupAuthOn is setupAuth over tb's engine.
func setupAuthOn(t *testing.T, tb *testBundle, opts ...func(*Config, *auth.Table)) *authBundle {
	t.Helper()
	b := &authBundle{testBundle: tb, tokens: map[string]string{}, key: []byte(strings.Repeat("k", 32))}
	table := auth.NewTable(nil)
	now := time.Now()
	mint := func(name string, spec auth.Spec) auth.Token {
		full, tok := auth.New(spec, now.Add(-time.Hour))
		b.tokens[name] = "Bearer " + full
		table.Put(tok)
		return tok
	}
	mint("read", auth.Spec{Name: "reader", Scope: auth.ScopeRead})
	mint("write", auth.Spec{Scope: auth.ScopeWrite})
	mint("admin", auth.Spec{Name: "ops", Scope: auth.ScopeAdmin, ExpiresAt: now.Add(time.Hour)})
	mint("expired", auth.Spec{Scope: auth.ScopeAdmin, ExpiresAt: now.Add(-time.Second)})
	revoked := mint("revoked", auth.Spec{Scope: auth.ScopeAdmin})
	revoked.RevokedAt = &now
	table.Put(revoked)
	cfg := Config{MaxBodyBytes: 64 << 10, Gates: b.engine, Verifier: auth.NewVerifier(table), NodeKey: b.key}
	for _, o := range opts {
		o(&cfg, table)
	}
	srv, err := New(cfg, SingleShard(b.engine))
	require.NoError(t, err)
	b.server = srv
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	b.url = ts.URL + BasePath
	return b
}

// as sends a request with the named credential.
func (b *authBundle) as(t *testing.T, cred, method, path string, body any, headers ...string) response {
	t.Helper()
	if h := b.tokens[cred]; h != "" {
		headers = append(headers, "Authorization", h)
	}
	return b.do(t, method, path, body, headers...)
}

// concrete fills a route's path parameters.
func concrete(route string) string {
	r := strings.NewReplacer(":id/start", "noop_chain/start", ":id/signal-with-start", "noop_chain/signal-with-start",
		":id", "0003e886-0000-4000-8000-000000000001", ":signal", "go", ":shard", "3", ":gate", "g1",
		":peer", "p1", ":schedule", "nightly", ":token", "0123456789abcdef", ":webhook", "hook1", ":activity", "act1",
		":kind", "workflow", ":name", "report")
	return r.Replace(route)
}

// wantStatus is the documented answer of cred on a route of access a: 0
// means allowed (anything but 401 and 403).
func wantStatus(a access, cred string) int {
	switch a.class {
	case classOpen:
		return 0
	case classNode:
		return http.StatusUnauthorized
	case classCapability:
		return -1 // the route's own credential: a bearer token changes nothing
	}
	scope := map[string]auth.Scope{"read": auth.ScopeRead, "write": auth.ScopeWrite, "admin": auth.ScopeAdmin}[cred]
	switch {
	case scope == auth.ScopeNone:
		return http.StatusUnauthorized
	case !scope.Allows(a.scope):
		return http.StatusForbidden
	}
	return 0
}

// documented is every route's access as the README's Security section
// and docs/http-api.md give it.
var documented = map[string]access{
	"GET /healthz":                                 open,
	"GET /readyz":                                  open,
	"GET /api/harvest/openapi.json":                open,
	"GET /ui":                                      open,
	"GET /ui/*asset":                               open,
	"GET /api/harvest/whoami":                      needRead,
	"GET /metrics":                                 needRead,
	"GET /api/harvest/cluster/members":             needRead,
	"GET /api/harvest/cluster/routing":             needRead,
	"GET /api/harvest/workflows":                   needRead,
	"GET /api/harvest/flow":                        needRead,
	"GET /api/harvest/workflows/:id":               needRead,
	"GET /api/harvest/workflows/:id/result":        needRead,
	"GET /api/harvest/workflows/:id/children":      needRead,
	"GET /api/harvest/workflows/:id/history":       needRead,
	"GET /api/harvest/workflows/:id/events/stream": needRead,
	"GET /api/harvest/workflows/:id/query/:query":  needRead,
	"POST /api/harvest/workflows/:id/query/:query": needRead,

	"POST /api/harvest/workflows/:id/start":             needWrite,
	"POST /api/harvest/workflows/batch_start":           needWrite,
	"POST /api/harvest/workflows/:id/signal-with-start": needWrite,
	"POST /api/harvest/workflows/:id/signal/:signal":    needWrite,
	"POST /api/harvest/workflows/:id/update/:update":    needWrite,
	"POST /api/harvest/workflows/:id/update-with-start": needWrite,
	"POST /api/harvest/batch":                           needAdmin,
	"GET /api/harvest/batch/:id":                        needRead,
	"POST /api/harvest/batch/:id/cancel":                needAdmin,
	"POST /api/harvest/workflows/:id/cancel":            needWrite,

	"POST /api/harvest/workflows/:id/terminate":     needAdmin,
	"POST /api/harvest/workflows/:id/reset":         needAdmin,
	"GET /api/harvest/admin/shards":                 needAdmin,
	"POST /api/harvest/admin/shards":                needAdmin,
	"GET /api/harvest/admin/shards/:shard":          needAdmin,
	"POST /api/harvest/admin/shards/:shard/drain":   needAdmin,
	"POST /api/harvest/admin/shards/:shard/undrain": needAdmin,
	"GET /api/harvest/admin/raft/peers":             needAdmin,
	"DELETE /api/harvest/admin/raft/peers/:peer":    needAdmin,
	"GET /api/harvest/admin/gates":                  needAdmin,
	"POST /api/harvest/admin/gates":                 needAdmin,
	"DELETE /api/harvest/admin/gates/:gate":         needAdmin,

	"GET /api/harvest/schedules":                    needRead,
	"GET /api/harvest/schedules/:schedule":          needRead,
	"POST /api/harvest/schedules/:schedule/trigger": needWrite,
	"POST /api/harvest/schedules":                   needAdmin,
	"DELETE /api/harvest/schedules/:schedule":       needAdmin,
	"POST /api/harvest/schedules/:schedule/pause":   needAdmin,
	"POST /api/harvest/schedules/:schedule/resume":  needAdmin,
	"GET /api/harvest/deferred/:deferred":           needRead,
	"GET /api/harvest/admin/deferred":               needAdmin,

	"GET /api/harvest/admin/tokens":                  needAdmin,
	"POST /api/harvest/admin/tokens":                 needAdmin,
	"DELETE /api/harvest/admin/tokens/:token":        needAdmin,
	"GET /api/harvest/internal/shards/:shard/probe":  nodeOnly,
	"GET /api/harvest/internal/catalog/index":        nodeOnly,
	"POST /api/harvest/internal/catalog/schedules":   nodeOnly,
	"POST /api/harvest/internal/shards/:shard/claim": nodeOnly,

	"GET /api/harvest/admin/webhooks":                needAdmin,
	"POST /api/harvest/admin/webhooks":               needAdmin,
	"DELETE /api/harvest/admin/webhooks/:webhook":    needAdmin,
	"GET /api/harvest/admin/activities":              needAdmin,
	"POST /api/harvest/admin/activities":             needAdmin,
	"DELETE /api/harvest/admin/activities/:activity": needAdmin,
	"GET /api/harvest/admin/limits":                  needAdmin,
	"PUT /api/harvest/admin/limits/:kind/:name":      needAdmin,
	"DELETE /api/harvest/admin/limits/:kind/:name":   needAdmin,
	"POST /api/harvest/webhooks/:webhook":            capability,
	"POST /api/harvest/activities/complete":          capability,
	"POST /api/harvest/activities/fail":              capability,
	"POST /api/harvest/activities/heartbeat":         capability,
}

func TestRouteAccess(t *testing.T) {
	b := setupAuth(t)
	require.Len(t, b.server.gin.Routes(), len(documented), "every route is documented, and every documented route served")
	for _, r := range b.server.gin.Routes() {
		a, ok := b.server.access[r.Method+" "+r.Path]
		require.True(t, ok, "route %s %s has no access class: register it with handle", r.Method, r.Path)
		require.Equal(t, documented[r.Method+" "+r.Path], a, "access of %s %s", r.Method, r.Path)
		for _, cred := range credentials {
			t.Run(r.Method+" "+r.Path+" as "+cred, func(t *testing.T) {
				res := b.send(t, cred, r.Method, concrete(r.Path))
				want := wantStatus(a, cred)
				if want == -1 {
					require.Equal(t, b.send(t, "none", r.Method, concrete(r.Path)).Status, res.Status, "%s as %s: %s", r.Path, cred, res.Raw)
					return
				}
				if want == 0 {
					require.NotContains(t, []int{401, 403}, res.Status, "%s as %s: %s", r.Path, cred, res.Raw)
					return
				}
				requireError(t, res, want, map[int]string{401: codeUnauthenticated, 403: codeForbidden}[want])
			})
		}
	}
}

// send sends "{}" to a full path (BasePath included) as cred; a JSON
// answer is decoded.
func (b *authBundle) send(t *testing.T, cred, method, path string) response {
	t.Helper()
	req, err := http.NewRequest(method, strings.TrimSuffix(b.url, BasePath)+path, strings.NewReader("{}"))
	require.NoError(t, err)
	if h := b.tokens[cred]; h != "" {
		req.Header.Set("Authorization", h)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	out := response{Status: res.StatusCode, Header: res.Header, Raw: raw}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") && len(raw) > 0 {
		require.NoError(t, json.Unmarshal(raw, &out.Body), "body %s", raw)
	}
	return out
}

// nodeRequest builds a request to path signed as a node of the bundle's
// cluster (key) acting for id, at the time now gives.
func (b *authBundle) nodeRequest(t *testing.T, key []byte, now time.Time, id auth.Identity, method, path, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, b.url+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	signer := &Server{cfg: Config{NodeID: "n2", NodeKey: key}, now: func() time.Time { return now }}
	signer.signNode(req, NodeSig{Identity: id, Body: []byte(body)})
	return req
}

func (b *authBundle) doRequest(t *testing.T, req *http.Request) response {
	t.Helper()
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	out := response{Status: res.StatusCode, Raw: raw}
	require.NoError(t, json.Unmarshal(raw, &out.Body), "body %s", raw)
	return out
}

func TestNodeCredential(t *testing.T) {
	write := auth.Identity{TokenID: "0123456789abcdef", Scope: auth.ScopeWrite}
	probe := "/internal/shards/3/probe?workflow_name=noop_chain&idempotency_key=k"
	t.Run("ClientRoutingHeadersAreRefused", func(t *testing.T) {
		b := setupAuth(t)
		before := b.counts(t)
		for _, h := range []string{ForwardedHeader, ShardHeader, EpochHeader, IdentityHeader, "X-Harvest-Anything"} {
			r := b.as(t, "admin", "POST", "/workflows/noop_chain/start", map[string]any{"input": map[string]any{"activities": 0}},
				h, "0", "Idempotency-Key", "forged-1")
			requireError(t, r, http.StatusBadRequest, codeForgedHeader)
		}
		require.Equal(t, before, b.counts(t), "no run, event or claim")
	})
	t.Run("SignedRequestIsServed", func(t *testing.T) {
		b := setupAuth(t)
		req := b.nodeRequest(t, b.key, time.Now(), write, "POST", "/workflows/noop_chain/start", `{"input":{"activities":0}}`)
		r := b.doRequest(t, req)
		require.Equal(t, http.StatusCreated, r.Status, "body %s", r.Raw)
	})
	t.Run("IdentityIsAuthorizedAgain", func(t *testing.T) {
		b := setupAuth(t)
		read := auth.Identity{TokenID: "0123456789abcdef", Scope: auth.ScopeRead}
		req := b.nodeRequest(t, b.key, time.Now(), read, "POST", "/workflows/noop_chain/start", `{}`)
		requireError(t, b.doRequest(t, req), http.StatusForbidden, codeForbidden)
	})
	t.Run("WrongKeyIsRefused", func(t *testing.T) {
		b := setupAuth(t)
		req := b.nodeRequest(t, []byte(strings.Repeat("x", 32)), time.Now(), write, "POST", "/workflows/noop_chain/start", `{}`)
		requireError(t, b.doRequest(t, req), http.StatusUnauthorized, codeUnauthenticated)
	})
	t.Run("OldSignatureIsRefused", func(t *testing.T) {
		b := setupAuth(t)
		req := b.nodeRequest(t, b.key, time.Now().Add(-2*nodeAuthSkew), write, "POST", "/workflows/noop_chain/start", `{}`)
		requireError(t, b.doRequest(t, req), http.StatusUnauthorized, codeUnauthenticated)
	})
	t.Run("TamperedHeaderIsRefused", func(t *testing.T) {
		b := setupAuth(t)
		req := b.nodeRequest(t, b.key, time.Now(), write, "POST", "/workflows/noop_chain/start", `{}`)
		req.Header.Set(IdentityHeader, "admin 0123456789abcdef")
		requireError(t, b.doRequest(t, req), http.StatusUnauthorized, codeUnauthenticated)
	})
	t.Run("InternalRoutesRefuseUserTokens", func(t *testing.T) {
		b := setupAuth(t)
		requireError(t, b.as(t, "admin", "GET", probe, nil), http.StatusUnauthorized, codeUnauthenticated)
		claim := map[string]any{"workflow_name": "order", "workflow_id": "victim-1", "epoch": 9, "target_shard": 1}
		requireError(t, b.as(t, "admin", "POST", "/internal/shards/3/claim", claim), http.StatusUnauthorized, codeUnauthenticated)
	})
	t.Run("InternalRoutesServeNodes", func(t *testing.T) {
		b := setupAuth(t)
		r := b.doRequest(t, b.nodeRequest(t, b.key, time.Now(), write, "GET", probe, ""))
		require.Equal(t, http.StatusOK, r.Status, "body %s", r.Raw)
	})
	t.Run("NoKeyNoNodes", func(t *testing.T) {
		b := setup(t) // standalone: no cluster key
		srv := &authBundle{testBundle: b}
		r := srv.doRequest(t, srv.nodeRequest(t, []byte(strings.Repeat("k", 32)), time.Now(), write, "GET", probe, ""))
		requireError(t, r, http.StatusUnauthorized, codeUnauthenticated)
	})
}

func TestTerminatingPolicyNeedsAdmin(t *testing.T) {
	b := setupAuth(t)
	r := b.as(t, "write", "POST", "/workflows/block/start", map[string]any{"workflow_id": "order-1"})
	require.Equal(t, http.StatusCreated, r.Status, "body %s", r.Raw)
	terminating := map[string]any{"workflow_id": "order-1", "reuse_policy": "terminate_if_running"}
	t.Run("WriteIsForbidden", func(t *testing.T) {
		r := b.as(t, "write", "POST", "/workflows/block/start", terminating, "Idempotency-Key", "replace-0")
		requireError(t, r, http.StatusForbidden, codeForbidden)
	})
	t.Run("AdminTerminates", func(t *testing.T) {
		r := b.as(t, "admin", "POST", "/workflows/block/start", terminating, "Idempotency-Key", "replace-1")
		require.Equal(t, http.StatusCreated, r.Status, "body %s", r.Raw)
		t.Run("ItsKeyedReplayNeedsOnlyWrite", func(t *testing.T) {
			replay := b.as(t, "write", "POST", "/workflows/block/start", terminating, "Idempotency-Key", "replace-1")
			require.Equal(t, http.StatusOK, replay.Status, "body %s", replay.Raw)
			require.Equal(t, r.Body["execution_id"], replay.Body["execution_id"])
			require.Equal(t, true, replay.Body["deduplicated"])
		})
	})
	t.Run("SignalWithStartToo", func(t *testing.T) {
		body := map[string]any{"workflow_id": "order-1", "signal_name": "go", "signal_payload": "x", "id_reuse_policy": "terminate_if_running"}
		requireError(t, b.as(t, "write", "POST", "/workflows/block/signal-with-start", body), http.StatusForbidden, codeForbidden)
		r := b.as(t, "admin", "POST", "/workflows/block/signal-with-start", body)
		require.Less(t, r.Status, 300, "body %s", r.Raw)
	})
}

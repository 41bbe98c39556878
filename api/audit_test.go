package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/auth"
)

// logBuffer is a zerolog writer the tests read back.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// audits are the audit lines logged so far.
func (l *logBuffer) audits(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(l.String()))
	for sc.Scan() {
		var line map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line), "log line %s", sc.Text())
		if line["audit"] == true {
			out = append(out, line)
		}
	}
	return out
}

// auditOf waits for the audit line of action on target.
func (l *logBuffer) auditOf(t *testing.T, action, target string) map[string]any {
	t.Helper()
	var found map[string]any
	require.Eventually(t, func() bool {
		for _, line := range l.audits(t) {
			if line["action"] == action && line["target"] == target {
				found = line
				return true
			}
		}
		return false
	}, 5*time.Second, 5*time.Millisecond, "no audit line of %s on %q in:\n%s", action, target, l)
	return found
}

// tableAdmin is a TokenAdmin over an auth.Table.
type tableAdmin struct{ table *auth.Table }

func (a tableAdmin) CreateToken(_ context.Context, spec auth.Spec) (string, auth.Token, error) {
	full, tok := auth.New(spec, time.Now())
	a.table.Put(tok)
	return full, tok, nil
}

func (a tableAdmin) Tokens(context.Context) ([]auth.Token, error) { return a.table.List(), nil }

func (a tableAdmin) RevokeToken(_ context.Context, id string) (auth.Token, error) {
	tok, ok, _ := a.table.Token(id)
	if !ok {
		return auth.Token{}, ErrUnknownToken
	}
	now := time.Now()
	tok.RevokedAt = &now
	a.table.Put(tok)
	return tok, nil
}

// setupAudit is setupAuth with its log read back and a token admin.
func setupAudit(t *testing.T) (*authBundle, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	b := setupAuth(t, func(c *Config, table *auth.Table) {
		c.Logger = zerolog.New(logs)
		c.Tokens = tableAdmin{table: table}
	})
	return b, logs
}

// tokenID is the id of the bundle's named credential.
func (b *authBundle) tokenID(t *testing.T, cred string) string {
	t.Helper()
	id, err := auth.Parse(strings.TrimPrefix(b.tokens[cred], "Bearer "))
	require.NoError(t, err)
	return id
}

// requireNoSecret checks that no token, no part of a secret and not the
// cluster key appear in the log.
func (b *authBundle) requireNoSecret(t *testing.T, logs *logBuffer, extra ...string) {
	t.Helper()
	text := logs.String()
	require.NotContains(t, text, "Bearer")
	require.NotContains(t, text, auth.Prefix, "a whole token")
	require.NotContains(t, text, string(b.key))
	for _, h := range b.tokens {
		require.NotContains(t, text, h[len(h)-64:], "a token's secret")
	}
	for _, s := range extra {
		require.NotContains(t, text, s)
	}
}

// auditTargets is the target each admin route's audit line names when
// sent to its concrete path.
var auditTargets = map[string]string{
	"POST /api/harvest/workflows/:id/terminate":      "id=0003e886-0000-4000-8000-000000000001",
	"POST /api/harvest/batch/:id/cancel":             "id=0003e886-0000-4000-8000-000000000001",
	"POST /api/harvest/workflows/:id/reset":          "id=0003e886-0000-4000-8000-000000000001",
	"GET /api/harvest/admin/shards/:shard":           "shard=3",
	"POST /api/harvest/admin/shards/:shard/drain":    "shard=3",
	"POST /api/harvest/admin/shards/:shard/undrain":  "shard=3",
	"DELETE /api/harvest/admin/raft/peers/:peer":     "peer=p1",
	"DELETE /api/harvest/admin/gates/:gate":          "gate=g1",
	"DELETE /api/harvest/admin/tokens/:token":        "token=0123456789abcdef",
	"DELETE /api/harvest/admin/webhooks/:webhook":    "webhook=hook1",
	"DELETE /api/harvest/admin/activities/:activity": "activity=act1",
	"PUT /api/harvest/admin/limits/:kind/:name":      "kind=workflow,name=report",
	"DELETE /api/harvest/admin/limits/:kind/:name":   "kind=workflow,name=report",
	"DELETE /api/harvest/schedules/:schedule":        "schedule=nightly",
	"POST /api/harvest/schedules/:schedule/pause":    "schedule=nightly",
	"POST /api/harvest/schedules/:schedule/resume":   "schedule=nightly",
}

func TestAuditTrail(t *testing.T) {
	t.Run("EveryAdminRouteLogsOneLine", func(t *testing.T) {
		b, logs := setupAudit(t)
		for route, a := range documented {
			if !isAdminRoute(a) {
				continue
			}
			action, ok := auditActions[route]
			require.True(t, ok, "admin route %s has no audit action", route)
			method, p, _ := strings.Cut(route, " ")
			res := b.send(t, "admin", method, concrete(p))
			line := logs.auditOf(t, action, auditTargets[route])
			require.Equal(t, b.tokenID(t, "admin"), line["token_id"], route)
			require.Equal(t, "ops", line["token_name"], route)
			require.Equal(t, auditResult(res.Status), line["result"], route)
			require.EqualValues(t, res.Status, line["status"], route)
			require.Equal(t, "info", line["level"], route)
			require.Contains(t, line["remote_addr"], "127.0.0.1:", route)
		}
		require.Len(t, logs.audits(t), len(auditActions), "one line per admin request, no more")
		b.requireNoSecret(t, logs)
	})
	t.Run("TokenChangesNameTheirToken", func(t *testing.T) {
		b, logs := setupAudit(t)
		r := b.as(t, "admin", "POST", "/admin/tokens", map[string]any{"name": "ci", "scope": "write"})
		require.Equal(t, http.StatusCreated, r.Status, "body %s", r.Raw)
		id, full := r.Body["id"].(string), r.Body["token"].(string)
		require.Equal(t, auditOK, logs.auditOf(t, "token.create", "token="+id)["result"])
		r = b.as(t, "admin", "DELETE", "/admin/tokens/"+id, nil)
		require.Equal(t, http.StatusOK, r.Status, "body %s", r.Raw)
		require.Equal(t, auditOK, logs.auditOf(t, "token.revoke", "token="+id)["result"])
		b.requireNoSecret(t, logs, full[len(full)-64:])
	})
	t.Run("RefusedAuthentication", func(t *testing.T) {
		b, logs := setupAudit(t)
		unknown, _ := auth.New(auth.Spec{Scope: auth.ScopeAdmin}, time.Now())
		r := b.do(t, "GET", "/workflows", nil, "Authorization", "Bearer "+unknown)
		requireError(t, r, http.StatusUnauthorized, codeUnauthenticated)
		line := logs.auditOf(t, authenticateAction, "GET /api/harvest/workflows")
		unknownID, err := auth.Parse(unknown)
		require.NoError(t, err)
		require.Equal(t, unknownID, line["token_id"])
		require.Equal(t, auditRefused, line["result"])
		require.EqualValues(t, http.StatusUnauthorized, line["status"])
		require.Equal(t, codeUnauthenticated, line["code"])
		b.requireNoSecret(t, logs, unknown[len(unknown)-64:])
	})
	t.Run("ForbiddenScopeNamesTheToken", func(t *testing.T) {
		b, logs := setupAudit(t)
		requireError(t, b.as(t, "read", "GET", "/admin/tokens", nil), http.StatusForbidden, codeForbidden)
		line := logs.auditOf(t, authenticateAction, "GET /api/harvest/admin/tokens")
		require.Equal(t, b.tokenID(t, "read"), line["token_id"])
		require.Equal(t, "reader", line["token_name"])
		require.EqualValues(t, http.StatusForbidden, line["status"])
		b.requireNoSecret(t, logs)
	})
	t.Run("RefusedNodeRequest", func(t *testing.T) {
		b, logs := setupAudit(t)
		id := auth.Identity{TokenID: "0123456789abcdef", Scope: auth.ScopeAdmin}
		req := b.nodeRequest(t, []byte(strings.Repeat("x", 32)), time.Now(), id, "GET", "/admin/gates", "")
		requireError(t, b.doRequest(t, req), http.StatusUnauthorized, codeUnauthenticated)
		line := logs.auditOf(t, authenticateAction, "GET /api/harvest/admin/gates")
		require.Equal(t, "n2", line["from_node_id"], "the node the request claims to come from")
		require.NotContains(t, line, "node_id", "node_id is the logging node's, from its logger")
		b.requireNoSecret(t, logs, req.Header.Get(NodeAuthHeader))
	})
	t.Run("TokenInPathIsRedacted", func(t *testing.T) {
		b, logs := setupAudit(t)
		full := strings.TrimPrefix(b.tokens["write"], "Bearer ")
		b.as(t, "admin", "DELETE", "/admin/tokens/"+full, nil)
		logs.auditOf(t, "token.revoke", "token="+auditRedacted)
		b.requireNoSecret(t, logs)
	})
	t.Run("ForwardedAdminRequestIsLoggedOnceByItsEntryNode", func(t *testing.T) {
		b, logs := setupAudit(t)
		id := auth.Identity{TokenID: b.tokenID(t, "admin"), Scope: auth.ScopeAdmin}
		r := b.doRequest(t, b.nodeRequest(t, b.key, time.Now(), id, "GET", "/admin/gates", ""))
		require.Equal(t, http.StatusOK, r.Status, "body %s", r.Raw)
		require.Empty(t, logs.audits(t))
	})
	t.Run("OrdinaryRequestsAreNotLogged", func(t *testing.T) {
		b, logs := setupAudit(t)
		require.Equal(t, http.StatusOK, b.as(t, "read", "GET", "/workflows", nil).Status)
		r := b.as(t, "write", "POST", "/workflows/noop_chain/start", map[string]any{"input": map[string]any{"activities": 0}})
		require.Equal(t, http.StatusCreated, r.Status, "body %s", r.Raw)
		require.Empty(t, logs.audits(t))
	})
}

package api

import (
	"context"
	"net/http"
	"net/netip"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/auth"
	"github.com/harvestd/harvest/engine"
	"github.com/harvestd/harvest/internal/activitystore"
)

// activityHeaderValue is the header value of the activity tests: it may
// reach neither a log line nor an answer.
const activityHeaderValue = "Bearer sk_live_activity_secret_77"

type actBundle struct {
	*authBundle
	logs *syncBuffer
}

// setupActivities is a server with tokens on, HTTP activities kept in the
// test database, the outbound rules allowing 127.0.0.1 only (as
// --callback-allow-cidr 127.0.0.1/32 would), the engine's registry as
// the Go activities, and its log captured; activity "charge" exists.
func setupActivities(t *testing.T, allow ...netip.Prefix) *actBundle {
	t.Helper()
	tb := setup(t)
	store, err := activitystore.Load(context.Background(), tb.pool)
	require.NoError(t, err)
	logs := &syncBuffer{}
	b := &actBundle{logs: logs, authBundle: setupAuthOn(t, tb, func(cfg *Config, _ *auth.Table) {
		cfg.HTTPActivities = store
		cfg.OutboundURLs = engine.CallbackPolicy{Allow: allow}
		cfg.ActivityNames = tb.engine.Registry()
		cfg.Logger = zerolog.New(logs).Level(zerolog.DebugLevel)
	})}
	res := b.as(t, "admin", http.MethodPost, "/admin/activities", map[string]any{"name": "charge",
		"url": "https://93.184.215.14/charge", "headers": map[string]string{"Authorization": activityHeaderValue},
		"timeout": "30s", "retry": map[string]any{"max_attempts": 5, "initial_interval": "2s", "non_retryable_errors": []string{"http_503"}}})
	require.Equal(t, http.StatusCreated, res.Status, "%s", res.Raw)
	require.NotContains(t, string(res.Raw), activityHeaderValue, "the answer redacts header values")
	t.Cleanup(func() {
		require.NotContains(t, logs.String(), activityHeaderValue, "a header value reached the log")
	})
	return b
}

func TestHTTPActivityAdmin(t *testing.T) {
	t.Run("ListRedactsHeaderValues", func(t *testing.T) {
		b := setupActivities(t)
		res := b.as(t, "admin", http.MethodGet, "/admin/activities", nil)
		require.Equal(t, http.StatusOK, res.Status)
		require.NotContains(t, string(res.Raw), activityHeaderValue)
		acts := res.Body["activities"].([]any)
		require.Len(t, acts, 1)
		a := acts[0].(map[string]any)
		require.Equal(t, "charge", a["name"])
		require.Equal(t, "https://93.184.215.14/charge", a["url"])
		require.Equal(t, map[string]any{"Authorization": "[redacted]"}, a["headers"])
		require.Equal(t, "30s", a["timeout"])
		require.Equal(t, map[string]any{"max_attempts": float64(5), "initial_interval": "2s", "non_retryable_errors": []any{"http_503"}}, a["retry"])
		require.NotEmpty(t, a["created_at"])
	})
	t.Run("RegisterAgainChangesNothingOtherConfigConflicts", func(t *testing.T) {
		b := setupActivities(t)
		res := b.as(t, "admin", http.MethodPost, "/admin/activities", map[string]any{"name": "charge", "url": "https://93.184.215.14/other"})
		requireError(t, res, http.StatusConflict, codeConflict)
	})
	t.Run("AGoActivityNameConflicts", func(t *testing.T) {
		b := setupActivities(t)
		res := b.as(t, "admin", http.MethodPost, "/admin/activities", map[string]any{"name": "charge_card", "url": "https://93.184.215.14/"})
		requireError(t, res, http.StatusConflict, codeConflict)
	})
	t.Run("BadInput", func(t *testing.T) {
		b := setupActivities(t)
		for _, tc := range []struct {
			name   string
			body   any
			status int
			code   string
		}{
			{"MalformedJSON", `{"name": "x", "url": `, http.StatusBadRequest, codeInvalidJSON},
			{"UnknownField", map[string]any{"name": "x", "url": "https://93.184.215.14/", "method": "GET"}, http.StatusBadRequest, codeInvalidJSON},
			{"EmptyName", map[string]any{"name": "", "url": "https://93.184.215.14/"}, http.StatusBadRequest, codeInvalidArgument},
			{"NameWithSpace", map[string]any{"name": "a b", "url": "https://93.184.215.14/"}, http.StatusBadRequest, codeInvalidArgument},
			{"NotAURL", map[string]any{"name": "x", "url": "charge"}, http.StatusBadRequest, codeInvalidArgument},
			{"FileURL", map[string]any{"name": "x", "url": "file:///etc/passwd"}, http.StatusBadRequest, codeInvalidArgument},
			{"LoopbackURL", map[string]any{"name": "x", "url": "http://127.0.0.1:8080/"}, http.StatusUnprocessableEntity, "url_refused"},
			{"MetadataURL", map[string]any{"name": "x", "url": "http://169.254.169.254/latest"}, http.StatusUnprocessableEntity, "url_refused"},
			{"IdempotencyKeyHeader", map[string]any{"name": "x", "url": "https://93.184.215.14/", "headers": map[string]string{"Idempotency-Key": "k"}}, http.StatusBadRequest, codeInvalidArgument},
			{"HarvestHeader", map[string]any{"name": "x", "url": "https://93.184.215.14/", "headers": map[string]string{"harvest-attempt": "1"}}, http.StatusBadRequest, codeInvalidArgument},
			{"TimeoutNotADuration", map[string]any{"name": "x", "url": "https://93.184.215.14/", "timeout": "soon"}, http.StatusBadRequest, codeInvalidArgument},
			{"TimeoutTooLong", map[string]any{"name": "x", "url": "https://93.184.215.14/", "timeout": "1h"}, http.StatusBadRequest, codeInvalidArgument},
			{"UnboundedRetry", map[string]any{"name": "x", "url": "https://93.184.215.14/", "retry": map[string]any{"max_attempts": -1}}, http.StatusBadRequest, codeInvalidArgument},
		} {
			t.Run(tc.name, func(t *testing.T) {
				requireError(t, b.as(t, "admin", http.MethodPost, "/admin/activities", tc.body), tc.status, tc.code)
			})
		}
		res := b.as(t, "admin", http.MethodGet, "/admin/activities", nil)
		require.Len(t, res.Body["activities"], 1, "nothing refused was stored")
	})
	t.Run("LoopbackAllowedByTheAllowList", func(t *testing.T) {
		b := setupActivities(t, netip.MustParsePrefix("127.0.0.1/32"))
		res := b.as(t, "admin", http.MethodPost, "/admin/activities", map[string]any{"name": "local", "url": "http://127.0.0.1:8080/x"})
		require.Equal(t, http.StatusCreated, res.Status, "%s", res.Raw)
	})
	t.Run("Delete", func(t *testing.T) {
		b := setupActivities(t)
		res := b.as(t, "admin", http.MethodDelete, "/admin/activities/charge", nil)
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
		requireError(t, b.as(t, "admin", http.MethodDelete, "/admin/activities/charge", nil), http.StatusNotFound, codeNotFound)
		res = b.as(t, "admin", http.MethodGet, "/admin/activities", nil)
		require.Empty(t, res.Body["activities"])
	})
	t.Run("NeedsAdmin", func(t *testing.T) {
		b := setupActivities(t)
		requireError(t, b.as(t, "write", http.MethodGet, "/admin/activities", nil), http.StatusForbidden, codeForbidden)
		requireError(t, b.as(t, "write", http.MethodPost, "/admin/activities", map[string]any{"name": "x", "url": "https://93.184.215.14/"}),
			http.StatusForbidden, codeForbidden)
		requireError(t, b.as(t, "write", http.MethodDelete, "/admin/activities/charge", nil), http.StatusForbidden, codeForbidden)
		requireError(t, b.as(t, "read", http.MethodGet, "/admin/activities", nil), http.StatusForbidden, codeForbidden)
	})
	t.Run("AuditLinesNameTheActivity", func(t *testing.T) {
		b := setupActivities(t)
		b.as(t, "admin", http.MethodDelete, "/admin/activities/charge", nil)
		require.Contains(t, b.logs.String(), `"action":"activity.register"`)
		require.Contains(t, b.logs.String(), `"target":"activity=charge"`)
		require.Contains(t, b.logs.String(), `"action":"activity.delete"`)
	})
}

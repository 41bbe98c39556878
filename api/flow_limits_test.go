package api

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/auth"
	"github.com/harvestd/harvest/internal/limitstore"
)

type limitBundle struct {
	*authBundle
	store *limitstore.Store
	logs  *syncBuffer
}

// setupLimits is a server with tokens on, flow limits kept in the test
// database and its log captured; workflow "report" is limited to 2 runs
// per customer.
func setupLimits(t *testing.T) *limitBundle {
	t.Helper()
	tb := setup(t)
	store, err := limitstore.Load(context.Background(), tb.pool)
	require.NoError(t, err)
	logs := &syncBuffer{}
	b := &limitBundle{store: store, logs: logs, authBundle: setupAuthOn(t, tb, func(cfg *Config, _ *auth.Table) {
		cfg.FlowLimits = store
		cfg.Logger = zerolog.New(logs).Level(zerolog.DebugLevel)
	})}
	res := b.as(t, "admin", http.MethodPut, "/admin/limits/workflow/report", map[string]any{"max_running": 2, "key_pointer": "/customer"})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	return b
}

// list is GET /admin/limits's limits.
func (b *limitBundle) list(t *testing.T) []any {
	t.Helper()
	res := b.as(t, "admin", http.MethodGet, "/admin/limits", nil)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	return res.Body["limits"].([]any)
}

func TestFlowLimitAdmin(t *testing.T) {
	t.Run("SetAndList", func(t *testing.T) {
		b := setupLimits(t)
		res := b.as(t, "admin", http.MethodPut, "/admin/limits/activity/render_report",
			map[string]any{"max_running": 1, "per_second": 2.5, "burst": 3, "rate_key_pointer": "/customer"})
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
		require.Equal(t, "activity", res.Body["kind"])
		require.Equal(t, 2.5, res.Body["per_second"])
		require.NotEmpty(t, res.Body["updated_at"])

		list := b.list(t)
		require.Len(t, list, 2)
		act, wf := list[0].(map[string]any), list[1].(map[string]any)
		require.Equal(t, "render_report", act["name"], "activities first")
		require.Equal(t, float64(3), act["burst"])
		require.Equal(t, "/customer", act["rate_key_pointer"])
		require.Equal(t, "report", wf["name"])
		require.Equal(t, float64(2), wf["max_running"])
		require.Equal(t, "/customer", wf["key_pointer"])
		require.NotContains(t, wf, "per_second", "a workflow has no rate")
		require.Len(t, b.store.Current().Limits, 2, "what the engines read")
	})
	t.Run("ClusterScope", func(t *testing.T) {
		b := setupLimits(t)
		res := b.as(t, "admin", http.MethodPut, "/admin/limits/workflow/report", map[string]any{"max_running": 2, "scope": "cluster"})
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
		require.Equal(t, "cluster", res.Body["scope"])
		require.Equal(t, "cluster", b.list(t)[0].(map[string]any)["scope"])
		require.True(t, b.store.Current().Limits["workflow/report"].Concurrency().Cluster(), "what the engines read")
	})
	t.Run("SetAgainChangesNothingOtherReplaces", func(t *testing.T) {
		b := setupLimits(t)
		before := b.list(t)[0].(map[string]any)["updated_at"]
		res := b.as(t, "admin", http.MethodPut, "/admin/limits/workflow/report", map[string]any{"max_running": 2, "key_pointer": "/customer"})
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
		require.Equal(t, before, res.Body["updated_at"], "the same limit again")

		res = b.as(t, "admin", http.MethodPut, "/admin/limits/workflow/report", `{}`)
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
		lift := b.list(t)[0].(map[string]any)
		require.Equal(t, float64(0), lift["max_running"], "a lift is kept")
		require.NotContains(t, lift, "key_pointer")
	})
	t.Run("BadInput", func(t *testing.T) {
		b := setupLimits(t)
		const path = "/admin/limits/workflow/report"
		for _, tc := range []struct {
			name, path string
			body       any
			status     int
			code       string
		}{
			{"MalformedJSON", path, `{"max_running": `, http.StatusBadRequest, codeInvalidJSON},
			{"NotAnObject", path, `[1]`, http.StatusBadRequest, codeInvalidJSON},
			{"TrailingData", path, `{} {}`, http.StatusBadRequest, codeInvalidJSON},
			{"UnknownField", path, map[string]any{"max_running": 1, "max": 2}, http.StatusBadRequest, codeInvalidJSON},
			{"StringNumber", path, `{"max_running": "2"}`, http.StatusBadRequest, codeInvalidJSON},
			{"FractionalMaxRunning", path, `{"max_running": 1.5}`, http.StatusBadRequest, codeInvalidJSON},
			{"OverflowingMaxRunning", path, `{"max_running": 1e30}`, http.StatusBadRequest, codeInvalidJSON},
			{"HugeMaxRunning", path, `{"max_running": 2147483648}`, http.StatusBadRequest, codeInvalidArgument},
			{"NegativeMaxRunning", path, `{"max_running": -1}`, http.StatusBadRequest, codeInvalidArgument},
			{"NullMaxRunning", path, `{"max_running": null, "key_pointer": "/x"}`, http.StatusBadRequest, codeInvalidArgument},
			{"NaN", "/admin/limits/activity/charge", `{"per_second": NaN}`, http.StatusBadRequest, codeInvalidJSON},
			{"HugeExponentRate", "/admin/limits/activity/charge", `{"per_second": 1e400}`, http.StatusBadRequest, codeInvalidJSON},
			{"HugeRate", "/admin/limits/activity/charge", `{"per_second": 1e7}`, http.StatusBadRequest, codeInvalidArgument},
			{"TinyRate", "/admin/limits/activity/charge", `{"per_second": 1e-300}`, http.StatusBadRequest, codeInvalidArgument},
			{"EmptyBody", "/admin/limits/activity/charge", ``, http.StatusBadRequest, codeInvalidArgument},
			{"NegativeRate", "/admin/limits/activity/charge", `{"per_second": -0.5}`, http.StatusBadRequest, codeInvalidArgument},
			{"NegativeBurst", "/admin/limits/activity/charge", `{"per_second": 1, "burst": -1}`, http.StatusBadRequest, codeInvalidArgument},
			{"HugeBurst", "/admin/limits/activity/charge", `{"per_second": 1, "burst": 9000000}`, http.StatusBadRequest, codeInvalidArgument},
			{"BurstWithoutRate", "/admin/limits/activity/charge", `{"burst": 2}`, http.StatusBadRequest, codeInvalidArgument},
			{"WorkflowRate", path, `{"max_running": 1, "per_second": 1}`, http.StatusBadRequest, codeInvalidArgument},
			{"UnknownScope", path, `{"max_running": 1, "scope": "region"}`, http.StatusBadRequest, codeInvalidArgument},
			{"ScopeWrongType", path, `{"max_running": 1, "scope": 1}`, http.StatusBadRequest, codeInvalidJSON},
			{"ScopeWithoutMaxRunning", path, `{"scope": "cluster"}`, http.StatusBadRequest, codeInvalidArgument},
			{"ActivityClusterScope", "/admin/limits/activity/charge", `{"max_running": 1, "scope": "cluster"}`, http.StatusBadRequest, codeInvalidArgument},
			{"PointerNotAPointer", path, `{"max_running": 1, "key_pointer": "customer"}`, http.StatusBadRequest, codeInvalidArgument},
			{"PointerBadEscape", path, `{"max_running": 1, "key_pointer": "/a~2"}`, http.StatusBadRequest, codeInvalidArgument},
			{"PointerNUL", path, `{"max_running": 1, "key_pointer": "/a\u0000"}`, http.StatusBadRequest, codeInvalidJSON},
			{"PointerLoneSurrogate", path, `{"max_running": 1, "key_pointer": "/\ud800"}`, http.StatusBadRequest, codeInvalidJSON},
			{"PointerTooLong", path, `{"max_running": 1, "key_pointer": "/` + strings.Repeat("p", 2000) + `"}`, http.StatusBadRequest, codeInvalidArgument},
			{"BodyInvalidUTF8", path, []byte("{\"max_running\": 1, \"key_pointer\": \"/\xff\"}"), http.StatusBadRequest, codeInvalidJSON},
			{"UnknownKind", "/admin/limits/shard/report", `{"max_running": 1}`, http.StatusBadRequest, codeInvalidArgument},
			{"NameNUL", "/admin/limits/workflow/a%00b", `{"max_running": 1}`, http.StatusBadRequest, codeInvalidArgument},
			{"NameControl", "/admin/limits/workflow/a%0Ab", `{"max_running": 1}`, http.StatusBadRequest, codeInvalidArgument},
			{"NameInvalidUTF8", "/admin/limits/workflow/a%FFb", `{"max_running": 1}`, http.StatusBadRequest, codeInvalidArgument},
			{"NameTooLong", "/admin/limits/workflow/" + strings.Repeat("n", 257), `{"max_running": 1}`, http.StatusBadRequest, codeInvalidArgument},
			{"EmptyName", "/admin/limits/workflow/", `{"max_running": 1}`, http.StatusNotFound, codeNoRoute},
			{"NameWithSlash", "/admin/limits/workflow/a%2Fb", `{"max_running": 1}`, http.StatusNotFound, codeNoRoute},
		} {
			t.Run(tc.name, func(t *testing.T) {
				requireError(t, b.as(t, "admin", http.MethodPut, tc.path, tc.body), tc.status, tc.code)
			})
		}
		list := b.list(t)
		require.Len(t, list, 1, "nothing refused was stored")
		require.Equal(t, float64(2), list[0].(map[string]any)["max_running"])
	})
	t.Run("Delete", func(t *testing.T) {
		b := setupLimits(t)
		res := b.as(t, "admin", http.MethodDelete, "/admin/limits/workflow/report", nil)
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
		require.Equal(t, map[string]any{"kind": "workflow", "name": "report", "deleted": true}, res.Body)
		requireError(t, b.as(t, "admin", http.MethodDelete, "/admin/limits/workflow/report", nil), http.StatusNotFound, codeNotFound)
		requireError(t, b.as(t, "admin", http.MethodDelete, "/admin/limits/shard/report", nil), http.StatusBadRequest, codeInvalidArgument)
		requireError(t, b.as(t, "admin", http.MethodDelete, "/admin/limits/workflow/a%00", nil), http.StatusBadRequest, codeInvalidArgument)
		require.Empty(t, b.list(t))
		require.Empty(t, b.store.Current().Limits)
	})
	t.Run("NeedsAdmin", func(t *testing.T) {
		b := setupLimits(t)
		requireError(t, b.as(t, "write", http.MethodGet, "/admin/limits", nil), http.StatusForbidden, codeForbidden)
		requireError(t, b.as(t, "write", http.MethodPut, "/admin/limits/workflow/report", `{}`), http.StatusForbidden, codeForbidden)
		requireError(t, b.as(t, "write", http.MethodDelete, "/admin/limits/workflow/report", nil), http.StatusForbidden, codeForbidden)
		require.Len(t, b.list(t), 1)
	})
	t.Run("AuditLinesNameTheLimit", func(t *testing.T) {
		b := setupLimits(t)
		b.as(t, "admin", http.MethodDelete, "/admin/limits/workflow/report", nil)
		require.Contains(t, b.logs.String(), `"action":"limit.set"`)
		require.Contains(t, b.logs.String(), `"target":"kind=workflow,name=report"`)
		require.Contains(t, b.logs.String(), `"action":"limit.delete"`)
	})
	t.Run("NodeWithoutAStore", func(t *testing.T) {
		b := setupAuth(t)
		requireError(t, b.as(t, "admin", http.MethodGet, "/admin/limits", nil), http.StatusNotFound, codeNotFound)
		requireError(t, b.as(t, "admin", http.MethodPut, "/admin/limits/workflow/report", `{}`), http.StatusNotFound, codeNotFound)
	})
}

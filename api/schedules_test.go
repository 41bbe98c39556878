package api

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/engine"
)

// waitFire polls a schedule's describe until its newest fire is no
// longer pending and returns it.
func (b *testBundle) waitFire(t *testing.T, id string, n int) map[string]any {
	t.Helper()
	var fire map[string]any
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := b.do(t, http.MethodGet, "/schedules/"+id, nil)
		require.Equal(t, http.StatusOK, r.Status, "body %s", r.Raw)
		fires, _ := r.Body["recent_fires"].([]any)
		if len(fires) == n {
			fire = fires[0].(map[string]any)
			if fire["outcome"] != "pending" {
				return fire
			}
		}
		require.True(t, time.Now().Before(deadline), "no answered fire %d of %s: %s", n, id, r.Raw)
		time.Sleep(20 * time.Millisecond)
	}
}

func TestSchedulesAPI(t *testing.T) {
	t.Parallel()
	b := setup(t)
	create := func(t *testing.T, body any) response {
		t.Helper()
		return b.do(t, http.MethodPost, "/schedules", body)
	}

	t.Run("create, list and describe show the next fire times", func(t *testing.T) {
		r := create(t, map[string]any{"schedule_id": "hourly", "workflow_name": "block", "cron": "0 * * * *",
			"time_zone": "Europe/Paris", "jitter": "10s", "catch_up_window": 600})
		require.Equal(t, http.StatusCreated, r.Status, "body %s", r.Raw)
		require.Equal(t, "skip", r.Body["overlap"])
		require.Equal(t, "10m0s", r.Body["catch_up_window"])
		require.EqualValues(t, 1, r.Body["generation"])
		next := r.Body["next_fires"].([]any)
		require.Len(t, next, 5)
		first, err := time.Parse(time.RFC3339, next[0].(string))
		require.NoError(t, err)
		require.Zero(t, first.Minute())
		require.True(t, first.After(time.Now()))
		list := b.do(t, http.MethodGet, "/schedules", nil)
		require.Equal(t, http.StatusOK, list.Status)
		require.Len(t, list.Body["schedules"], 1)
		require.Equal(t, http.StatusConflict, create(t, map[string]any{"schedule_id": "hourly", "workflow_name": "block", "cron": "0 * * * *"}).Status)
	})
	t.Run("trigger starts a run through the node's routing", func(t *testing.T) {
		r := b.do(t, http.MethodPost, "/schedules/hourly/trigger", nil)
		require.Equal(t, http.StatusAccepted, r.Status, "body %s", r.Raw)
		key := r.Body["fire"].(map[string]any)["key"].(string)
		require.True(t, strings.HasPrefix(key, "hv:sched:hourly:1:"), key)
		fire := b.waitFire(t, "hourly", 1)
		require.Equal(t, "started", fire["outcome"])
		require.Equal(t, "hourly", fire["workflow_id"])
		run := b.do(t, http.MethodGet, "/workflows/"+fire["execution_id"].(string), nil)
		require.Equal(t, http.StatusOK, run.Status)
		require.Equal(t, "RUNNING", run.Body["execution"].(map[string]any)["state"])
		// The run still holds the workflow id: skip skips the next fire.
		require.Equal(t, http.StatusAccepted, b.do(t, http.MethodPost, "/schedules/hourly/trigger", nil).Status)
		fire = b.waitFire(t, "hourly", 2)
		require.Equal(t, "skipped", fire["outcome"])
		require.Contains(t, fire["reason"], "is still running")
	})
	t.Run("a retried keyed trigger makes one run", func(t *testing.T) {
		require.Equal(t, http.StatusCreated, create(t, map[string]any{"schedule_id": "keyed", "workflow_name": "onboarding",
			"interval": "1h", "overlap": "allow_all"}).Status)
		first := b.do(t, http.MethodPost, "/schedules/keyed/trigger", nil, "Idempotency-Key", "deploy-7")
		require.Equal(t, http.StatusAccepted, first.Status, "body %s", first.Raw)
		require.Equal(t, false, first.Body["deduplicated"])
		key := first.Body["fire"].(map[string]any)["key"]
		require.Equal(t, "hv:sched:keyed:1:trigger:deploy-7", key)
		fire := b.waitFire(t, "keyed", 1)
		require.Equal(t, "started", fire["outcome"])
		// The client's retry, by header or body field: the same fire.
		for _, retry := range []response{
			b.do(t, http.MethodPost, "/schedules/keyed/trigger", nil, "Idempotency-Key", "deploy-7"),
			b.do(t, http.MethodPost, "/schedules/keyed/trigger", map[string]any{"idempotency_key": "deploy-7"}),
		} {
			require.Equal(t, http.StatusAccepted, retry.Status, "body %s", retry.Raw)
			require.Equal(t, true, retry.Body["deduplicated"])
			require.Equal(t, key, retry.Body["fire"].(map[string]any)["key"])
			require.Equal(t, fire["execution_id"], retry.Body["fire"].(map[string]any)["execution_id"])
		}
		r := b.do(t, http.MethodGet, "/schedules/keyed", nil)
		require.Len(t, r.Body["recent_fires"], 1, "one fire, one run")
		requireError(t, b.do(t, http.MethodPost, "/schedules/keyed/trigger", nil, "Idempotency-Key", "hv:sched:mine"),
			http.StatusBadRequest, codeInvalidArgument)
		requireError(t, b.do(t, http.MethodPost, "/schedules/keyed/trigger", map[string]any{"idempotency_key": ""}),
			http.StatusBadRequest, codeInvalidArgument)
		requireError(t, b.do(t, http.MethodPost, "/schedules/keyed/trigger", map[string]any{"key": "x"}),
			http.StatusBadRequest, codeInvalidJSON)
		require.Equal(t, http.StatusOK, b.do(t, http.MethodDelete, "/schedules/keyed", nil).Status)
	})
	t.Run("a gated fire is skipped with the gate's reason", func(t *testing.T) {
		require.Equal(t, http.StatusCreated, b.do(t, http.MethodPost, "/admin/gates",
			map[string]any{"gate_id": "freeze", "scope_kind": "workflow_name", "scope_value": "linger", "reason": "freeze"}).Status)
		defer b.do(t, http.MethodDelete, "/admin/gates/freeze", nil)
		require.Equal(t, http.StatusCreated, create(t, map[string]any{"schedule_id": "gated", "workflow_name": "linger", "interval": "1h"}).Status)
		require.Equal(t, http.StatusAccepted, b.do(t, http.MethodPost, "/schedules/gated/trigger", nil).Status)
		fire := b.waitFire(t, "gated", 1)
		require.Equal(t, "skipped", fire["outcome"])
		require.Equal(t, "gated: admission gate freeze: freeze", fire["reason"])
	})
	t.Run("a start refused for good fails the fire", func(t *testing.T) {
		require.Equal(t, http.StatusCreated, create(t, map[string]any{"schedule_id": "typed", "workflow_name": "typed",
			"interval": 3600, "input": map[string]any{"user_id": 0}}).Status)
		require.Equal(t, http.StatusAccepted, b.do(t, http.MethodPost, "/schedules/typed/trigger", nil).Status)
		fire := b.waitFire(t, "typed", 1)
		require.Equal(t, "failed", fire["outcome"])
		require.Contains(t, fire["reason"], "invalid_input")
	})
	t.Run("pause and resume", func(t *testing.T) {
		r := b.do(t, http.MethodPost, "/schedules/hourly/pause", nil)
		require.Equal(t, http.StatusOK, r.Status, "body %s", r.Raw)
		require.Equal(t, true, r.Body["paused"])
		r = b.do(t, http.MethodPost, "/schedules/hourly/resume", nil)
		require.Equal(t, http.StatusOK, r.Status)
		require.Equal(t, false, r.Body["paused"])
	})
	t.Run("delete, then it is gone and comes back as a new generation", func(t *testing.T) {
		require.Equal(t, http.StatusOK, b.do(t, http.MethodDelete, "/schedules/typed", nil).Status)
		requireError(t, b.do(t, http.MethodGet, "/schedules/typed", nil), http.StatusNotFound, codeNotFound)
		requireError(t, b.do(t, http.MethodDelete, "/schedules/typed", nil), http.StatusNotFound, codeNotFound)
		r := create(t, map[string]any{"schedule_id": "typed", "workflow_name": "typed", "interval": "1h"})
		require.Equal(t, http.StatusCreated, r.Status)
		require.EqualValues(t, 2, r.Body["generation"])
	})
	t.Run("bad input is a clear 4xx", func(t *testing.T) {
		for name, c := range map[string]struct {
			body   any
			status int
			code   string
		}{
			"malformed JSON":   {`{"schedule_id":`, 400, codeInvalidJSON},
			"not an object":    {`[1]`, 400, codeInvalidJSON},
			"unknown field":    {map[string]any{"schedule_id": "x", "workflow_name": "block", "cron": "* * * * *", "nope": 1}, 400, codeInvalidJSON},
			"wrong type":       {map[string]any{"schedule_id": 7, "workflow_name": "block"}, 400, codeInvalidJSON},
			"bad cron":         {map[string]any{"schedule_id": "x", "workflow_name": "block", "cron": "99 * * * *"}, 400, codeInvalidArgument},
			"unknown zone":     {map[string]any{"schedule_id": "x", "workflow_name": "block", "cron": "* * * * *", "time_zone": "Nowhere/City"}, 400, codeInvalidArgument},
			"unknown workflow": {map[string]any{"schedule_id": "x", "workflow_name": "nope", "cron": "* * * * *"}, 404, codeUnknownWorkflow},
			"huge interval":    {map[string]any{"schedule_id": "x", "workflow_name": "block", "interval": 1e300}, 400, codeInvalidArgument},
			"huge jitter":      {map[string]any{"schedule_id": "x", "workflow_name": "block", "interval": "1h", "jitter": "100000h"}, 400, codeInvalidArgument},
			"bad duration":     {map[string]any{"schedule_id": "x", "workflow_name": "block", "interval": "soon"}, 400, codeInvalidArgument},
			"no timing":        {map[string]any{"schedule_id": "x", "workflow_name": "block"}, 400, codeInvalidArgument},
			"bad overlap":      {map[string]any{"schedule_id": "x", "workflow_name": "block", "interval": "1h", "overlap": "most"}, 400, codeInvalidArgument},
			"NUL in the id":    {map[string]any{"schedule_id": "x\x00", "workflow_name": "block", "interval": "1h"}, 400, codeInvalidJSON},
			"NUL in the cron":  {map[string]any{"schedule_id": "x", "workflow_name": "block", "cron": "* * * *\x00 *"}, 400, codeInvalidJSON},
			"empty id":         {map[string]any{"workflow_name": "block", "interval": "1h"}, 400, codeInvalidArgument},
			"empty workflow":   {map[string]any{"schedule_id": "x", "interval": "1h"}, 400, codeInvalidArgument},
			"invalid UTF-8":    {"{\"schedule_id\":\"\xff\"}", 400, codeInvalidJSON},
		} {
			t.Run(name, func(t *testing.T) {
				requireError(t, create(t, c.body), c.status, c.code)
			})
		}
		requireError(t, b.do(t, http.MethodGet, "/schedules/bad:id", nil), http.StatusBadRequest, codeInvalidArgument)
		for _, r := range []struct{ method, path string }{
			{http.MethodGet, "/schedules/missing"}, {http.MethodDelete, "/schedules/missing"},
			{http.MethodPost, "/schedules/missing/pause"}, {http.MethodPost, "/schedules/missing/trigger"},
		} {
			missing := b.do(t, r.method, r.path, nil)
			requireError(t, missing, http.StatusNotFound, codeNotFound)
			require.Equal(t, `schedule "missing" not found`, missing.Body["error"], "%s %s", r.method, r.path)
		}
		require.Len(t, b.do(t, http.MethodGet, "/schedules", nil).Body["schedules"], 3, "no bad request created one")
	})
}

// lostCatalog is a schedule catalog whose every change may or may not
// have been made (the leader's answer was lost).
type lostCatalog struct{}

func (lostCatalog) Apply(context.Context, ScheduleOp) (engine.ScheduleDef, error) {
	return engine.ScheduleDef{}, fmt.Errorf("%w: ask the raft leader: connection reset", ErrOutcomeUnknown)
}

func (c lostCatalog) ApplyLocal(ctx context.Context, op ScheduleOp) (engine.ScheduleDef, error) {
	return c.Apply(ctx, op)
}

func (lostCatalog) Schedules() []engine.ScheduleDef { return nil }

// TestScheduleCatalogOutcomeUnknown: a change whose catalog outcome is
// unknown is a 503 saying so (retry after reading), not a 500.
func TestScheduleCatalogOutcomeUnknown(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv, err := New(Config{MaxBodyBytes: 64 << 10, Gates: b.engine, NodeKey: testNodeKey, ScheduleCatalog: lostCatalog{}},
		SingleShard(b.engine))
	require.NoError(t, err)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	b.url = ts.URL + BasePath
	for _, tc := range []struct {
		name, method, path string
		body               any
	}{
		{"create", http.MethodPost, "/schedules", map[string]any{"schedule_id": "lost", "workflow_name": "block", "interval": "1h"}},
		{"pause", http.MethodPost, "/schedules/lost/pause", nil},
		{"resume", http.MethodPost, "/schedules/lost/resume", nil},
		{"delete", http.MethodDelete, "/schedules/lost", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := b.do(t, tc.method, tc.path, tc.body)
			requireError(t, r, http.StatusServiceUnavailable, codeUnavailable)
			require.Contains(t, r.Body["error"], "outcome unknown")
		})
	}
}

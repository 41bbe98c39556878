package node

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/admin"
	"github.com/harvestd/harvest/httpactivity"
)

// TestClusterHTTPActivities: an HTTP activity registered through a
// follower reaches every node's raft catalog; runs placed on every
// shard, whichever node owns it, call it by name; a delete reaches every
// node.
func TestClusterHTTPActivities(t *testing.T) {
	var mu sync.Mutex
	keys := map[string]bool{}
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys[r.Header.Get("Idempotency-Key")] = true
		mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer cluster-downstream" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte(`{"charged": true}`))
	}))
	t.Cleanup(down.Close)
	windows := []time.Duration{time.Hour, time.Hour, time.Hour}
	c := newRaftClusterWindows(t, 2, windows, func(cfg *Config) {
		cfg.CallbackAllowCIDRs = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	})
	charge := harvest.NewRemoteActivity[map[string]any, json.RawMessage]("charge")
	require.NoError(t, c.reg.Register(harvest.NewWorkflow("remote_charge", func(ctx harvest.Context, in map[string]any) (json.RawMessage, error) {
		return charge.Execute(ctx, in).Get(ctx)
	})))

	r := call(t, c.nodes[1], "POST", "/admin/activities", map[string]any{"name": "charge", "url": down.URL + "/charge",
		"headers": map[string]string{"Authorization": "Bearer cluster-downstream"}, "timeout": "10s"})
	require.Equal(t, http.StatusCreated, r.Status, "%v", r.Body)
	require.Equal(t, map[string]any{"Authorization": "[redacted]"}, r.Body["headers"])
	for _, n := range c.nodes {
		eventually(t, "the activity on "+n.NodeID(), 10*time.Second, func() bool {
			_, ok, _ := n.activities.HTTPActivity("charge")
			return ok
		})
	}

	for _, shard := range []uint16{0, 1} {
		wf := keyOn(t, "remote_charge", c.cat, shard, nil, 0)
		s := call(t, c.nodes[2], "POST", "/workflows/remote_charge/start", map[string]any{"workflow_id": wf, "input": map[string]any{"shard": shard}})
		require.Equal(t, http.StatusCreated, s.Status, "%v", s.Body)
		require.Equal(t, shard, shardOf(t, s.Body["execution_id"]))
		res := call(t, c.nodes[0], "GET", fmt.Sprintf("/workflows/%v/result?wait=20s", s.Body["execution_id"]), nil)
		require.Equal(t, "COMPLETED", res.Body["state"], "%v", res.Body)
		require.Equal(t, map[string]any{"charged": true}, res.Body["output"])
	}
	mu.Lock()
	require.Len(t, keys, 2, "one key per run")
	mu.Unlock()

	del := call(t, c.nodes[0], "DELETE", "/admin/activities/charge", nil)
	require.Equal(t, http.StatusOK, del.Status, "%v", del.Body)
	for _, n := range c.nodes {
		eventually(t, "the delete on "+n.NodeID(), 10*time.Second, func() bool {
			_, ok, _ := n.activities.HTTPActivity("charge")
			return !ok
		})
	}
}

// TestDevNodeHTTPActivities: a node without gossip keeps its HTTP
// activities in its shard database: a registration survives a restart,
// and a run calls it.
func TestDevNodeHTTPActivities(t *testing.T) {
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"ok": true}`))
	}))
	t.Cleanup(down.Close)
	b := setup(t)
	b.cfg.CallbackAllowCIDRs = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	b.cfg.PollInterval = 20 * time.Millisecond
	charge := harvest.NewRemoteActivity[map[string]any, json.RawMessage]("charge")
	require.NoError(t, b.reg.Register(harvest.NewWorkflow("remote_charge", func(ctx harvest.Context, in map[string]any) (json.RawMessage, error) {
		return charge.Execute(ctx, in).Get(ctx)
	})))

	first := b.start(t, b.cfg)
	r := call(t, first, "POST", "/admin/activities", map[string]any{"name": "charge", "url": down.URL})
	require.Equal(t, http.StatusCreated, r.Status, "%v", r.Body)
	require.NoError(t, first.Stop(ctxT(t)))

	n := b.start(t, b.cfg)
	list := call(t, n, "GET", "/admin/activities", nil)
	require.Len(t, list.Body["activities"], 1, "the registration outlived the restart")
	s := call(t, n, "POST", "/workflows/remote_charge/start", map[string]any{"input": map[string]any{}})
	require.Equal(t, http.StatusCreated, s.Status, "%v", s.Body)
	res := call(t, n, "GET", fmt.Sprintf("/workflows/%v/result?wait=20s", s.Body["execution_id"]), nil)
	require.Equal(t, "COMPLETED", res.Body["state"], "%v", res.Body)
	require.Equal(t, map[string]any{"ok": true}, res.Body["output"])
}

// A name a replica lacks while it is not known to be current may be
// registered: its attempt is retried (an error), not failed for good.
func TestLookupActivityOnALaggingCatalog(t *testing.T) {
	cat := admin.Catalog{HTTPActivities: map[string]httpactivity.Config{"charge": {Name: "charge"}}}
	for _, current := range []bool{true, false} {
		a, ok, err := lookupActivity(cat, "charge", func() bool { return current })
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, "charge", a.Name)
	}
	_, ok, err := lookupActivity(cat, "other", func() bool { return true })
	require.NoError(t, err)
	require.False(t, ok, "a current replica that lacks it: not registered")
	_, _, err = lookupActivity(cat, "other", func() bool { return false })
	require.ErrorIs(t, err, ErrCatalogBehind)
}

package node

import (
	"fmt"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/demo"
	"github.com/harvestd/harvest/engine"
	"github.com/harvestd/harvest/flowlimit"
)

// TestClusterFlowLimits: a limit set at run time through a follower
// (forwarded to the leader) reaches every node's raft catalog, and the
// engine of every shard, whichever node owns it, enforces it on starts
// sent to any node: the second run of counter on each shard is queued.
// Deleting the limit releases the queued runs.
func TestClusterFlowLimits(t *testing.T) {
	c := newRaftCluster(t, 3, 2, time.Hour)
	via := follower(t, c)
	r := call(t, via, "PUT", "/admin/limits/workflow/"+demo.CounterName, map[string]any{"max_running": 1})
	require.Equal(t, http.StatusOK, r.Status, "%v", r.Body)
	require.EqualValues(t, 1, r.Body["max_running"])
	for _, n := range c.nodes {
		eventually(t, "the limit on "+n.NodeID(), 10*time.Second, func() bool {
			_, limits := n.flowLimits.current()
			return limits[flowlimit.Key(flowlimit.Workflow, demo.CounterName)].MaxRunning == 1
		})
	}
	flow := call(t, c.nodes[2], "GET", "/flow", nil)
	require.Contains(t, flow.Body["limits"], map[string]any{"workflow_name": demo.CounterName, "max_running": float64(1)}, "%v", flow.Body)

	var queued []string
	for _, shard := range []uint16{0, 1} {
		for i, key := range keysOn(t, demo.CounterName, c.cat, shard, 2) {
			entry := c.nodes[(int(shard)+i+1)%len(c.nodes)]
			s := call(t, entry, "POST", "/workflows/"+demo.CounterName+"/start",
				map[string]any{"input": map[string]any{"until": 3}}, "Idempotency-Key", key)
			require.Equal(t, http.StatusCreated, s.Status, "%v", s.Body)
			require.Equal(t, shard, shardOf(t, s.Body["execution_id"]))
			want := map[bool]string{true: "RUNNING", false: "QUEUED"}[i == 0]
			require.Equal(t, want, s.Body["state"], "start %d on shard %d through %s", i, shard, entry.NodeID())
			if i > 0 {
				queued = append(queued, fmt.Sprint(s.Body["execution_id"]))
			}
		}
	}
	list := call(t, c.nodes[0], "GET", "/admin/limits", nil)
	require.Len(t, list.Body["limits"], 1, "%v", list.Body)

	del := call(t, follower(t, c), "DELETE", "/admin/limits/workflow/"+demo.CounterName, nil)
	require.Equal(t, http.StatusOK, del.Status, "%v", del.Body)
	requireError(t, call(t, c.nodes[1], "DELETE", "/admin/limits/workflow/"+demo.CounterName, nil), http.StatusNotFound)
	for _, id := range queued {
		eventually(t, "queued run "+id+" released", 20*time.Second, func() bool {
			state := runState(t, c.nodes[0], id)
			return state == "RUNNING" || state == "COMPLETED"
		})
	}
}

// TestDevNodeFlowLimits: a node without gossip keeps its limits in its
// shard database: a limit outlives a restart and holds the second run;
// its delete releases it.
func TestDevNodeFlowLimits(t *testing.T) {
	b := setup(t)
	b.cfg.PollInterval = 20 * time.Millisecond
	first := b.start(t, b.cfg)
	r := call(t, first, "PUT", "/admin/limits/workflow/"+demo.CounterName, map[string]any{"max_running": 1})
	require.Equal(t, http.StatusOK, r.Status, "%v", r.Body)
	require.NoError(t, first.Stop(ctxT(t)))

	n := b.start(t, b.cfg)
	list := call(t, n, "GET", "/admin/limits", nil)
	require.Len(t, list.Body["limits"], 1, "the limit outlived the restart")
	var states []any
	var last string
	for range 2 {
		s := call(t, n, "POST", "/workflows/"+demo.CounterName+"/start", map[string]any{"input": map[string]any{"until": 3}})
		require.Equal(t, http.StatusCreated, s.Status, "%v", s.Body)
		states, last = append(states, s.Body["state"]), fmt.Sprint(s.Body["execution_id"])
	}
	require.Equal(t, []any{"RUNNING", "QUEUED"}, states)

	del := call(t, n, "DELETE", "/admin/limits/workflow/"+demo.CounterName, nil)
	require.Equal(t, http.StatusOK, del.Status, "%v", del.Body)
	eventually(t, "the queued run released", 20*time.Second, func() bool { return runState(t, n, last) == "RUNNING" })
}

// A node on static shards with gossip keeps no limits: the routes answer
// 404 and the engines apply the declared limits only.
func TestStaticClusterHasNoFlowLimits(t *testing.T) {
	c := newCluster(t, 1, 5*time.Second)
	require.Nil(t, c.nodes[0].flowLimits)
	require.Nil(t, c.nodes[0].engineLimits())
	requireError(t, call(t, c.nodes[0], "GET", "/admin/limits", nil), http.StatusNotFound)
}

// The engines' form of the limits: an activity's record sets both of
// its limits, a zero record lifts, and a version is built once.
func TestRuntimeLimitsView(t *testing.T) {
	version := uint64(1)
	limits := map[string]flowlimit.Limit{}
	for _, l := range []flowlimit.Limit{
		{Kind: flowlimit.Workflow, Name: "report", MaxRunning: 2, KeyPointer: "/customer"},
		{Kind: flowlimit.Workflow, Name: "lifted"},
		{Kind: flowlimit.Activity, Name: "charge", PerSecond: 5, Burst: 2},
	} {
		limits[l.Key()] = l
	}
	builds := 0
	r := &runtimeLimits{src: func() (uint64, map[string]flowlimit.Limit) { builds++; return version, limits }}
	got := r.get()
	require.Equal(t, engine.RuntimeLimits{
		Workflows:  map[string]harvest.ConcurrencyLimit{"report": {MaxRunning: 2, KeyPointer: "/customer"}, "lifted": {}},
		Activities: map[string]harvest.ConcurrencyLimit{"charge": {}},
		Rates:      map[string]harvest.RateLimit{"charge": {PerSecond: 5, Burst: 2}},
	}, got)
	same := func(a, b engine.RuntimeLimits) bool {
		return reflect.ValueOf(a.Workflows).Pointer() == reflect.ValueOf(b.Workflows).Pointer()
	}
	require.True(t, same(got, r.get()), "the same version is built once")
	version++
	delete(limits, "workflow/lifted")
	next := r.get()
	require.False(t, same(got, next), "a new version is built again")
	require.NotContains(t, next.Workflows, "lifted")
	require.Equal(t, 3, builds, "the source is read on every call")
	require.Equal(t, engine.RuntimeLimits{}, (&runtimeLimits{src: func() (uint64, map[string]flowlimit.Limit) { return 0, nil }}).get())
}

// follower is a node of c that is not the raft leader.
func follower(t *testing.T, c *cluster) *Node {
	t.Helper()
	for _, n := range c.nodes {
		if !n.admin.IsLeader() {
			return n
		}
	}
	t.Fatal("every node leads")
	return nil
}

// runState is the state of execution id, read through n.
func runState(t *testing.T, n *Node, id string) string {
	t.Helper()
	r := call(t, n, "GET", "/workflows/"+id, nil)
	require.Equal(t, http.StatusOK, r.Status, "%v", r.Body)
	return fmt.Sprint(r.Body["execution"].(map[string]any)["state"])
}

// requireError checks an error answer's status and JSON error body.
func requireError(t *testing.T, r reply, status int) {
	t.Helper()
	require.Equal(t, status, r.Status, "%v", r.Body)
	require.NotEmpty(t, r.Body["error"], "%v", r.Body)
	require.NotEmpty(t, r.Body["code"], "%v", r.Body)
}

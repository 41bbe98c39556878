package node

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/demo"
	"github.com/harvestd/harvest/flowlimit"
)

// runningOf lists the runs of ids that are RUNNING, and counts the
// COMPLETED ones.
func runningOf(t *testing.T, n *Node, ids []string) (running []string, completed int) {
	t.Helper()
	for _, id := range ids {
		switch runState(t, n, id) {
		case "RUNNING":
			running = append(running, id)
		case "COMPLETED":
			completed++
		}
	}
	return running, completed
}

// TestClusterScopeLimit: a limit counted across the cluster holds the
// runs of its key to the limit whatever shards they are placed on (here
// one run per shard of three, limit 1): every start answers QUEUED, the
// key's keeper grants one slot at a time, and a run's close gives it to
// the next. A limit per shard would run all three at once.
func TestClusterScopeLimit(t *testing.T) {
	c := newRaftCluster(t, 2, 3, time.Hour)
	r := call(t, c.nodes[0], "PUT", "/admin/limits/workflow/"+demo.CounterName, map[string]any{"max_running": 1, "scope": "cluster"})
	require.Equal(t, http.StatusOK, r.Status, "%v", r.Body)
	require.Equal(t, "cluster", r.Body["scope"])
	for _, n := range c.nodes {
		eventually(t, "the limit on "+n.NodeID(), 10*time.Second, func() bool {
			_, limits := n.flowLimits.current()
			return limits[flowlimit.Key(flowlimit.Workflow, demo.CounterName)].Scope == "cluster"
		})
	}
	var ids []string
	for shard := range uint16(3) {
		key := keysOn(t, demo.CounterName, c.cat, shard, 1)[0]
		s := call(t, c.nodes[int(shard)%2], "POST", "/workflows/"+demo.CounterName+"/start",
			map[string]any{"input": map[string]any{"until": 1}}, "Idempotency-Key", key)
		require.Equal(t, http.StatusCreated, s.Status, "%v", s.Body)
		require.Equal(t, shard, shardOf(t, s.Body["execution_id"]))
		require.Equal(t, "QUEUED", s.Body["state"], "a run waits for its keeper's grant")
		ids = append(ids, fmt.Sprint(s.Body["execution_id"]))
	}
	for done := range len(ids) {
		var running []string
		eventually(t, fmt.Sprintf("a run granted after %d closed", done), 30*time.Second, func() bool {
			var completed int
			running, completed = runningOf(t, c.nodes[1], ids)
			require.LessOrEqual(t, len(running), 1, "runs holding the key's one slot at once")
			require.Equal(t, done, completed)
			return len(running) == 1
		})
		sig := call(t, c.nodes[0], "POST", "/workflows/"+running[0]+"/signal/add", map[string]any{"id": "s", "n": 1},
			"Idempotency-Key", "done-"+running[0])
		require.Equal(t, true, sig.Body["signal_delivered"], "%v", sig.Body)
		eventually(t, "run "+running[0]+" completed", 20*time.Second, func() bool {
			return runState(t, c.nodes[0], running[0]) == "COMPLETED"
		})
	}
	_, completed := runningOf(t, c.nodes[0], ids)
	require.Equal(t, len(ids), completed)
}

package node

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/demo"
	"github.com/harvestd/harvest/ring"
)

// keysOn finds n idempotency keys of workflow name that route to shard
// under cat.
func keysOn(t *testing.T, name string, cat ring.Catalog, shard uint16, n int) []string {
	t.Helper()
	var keys []string
	for i := 0; len(keys) < n && i < 100000; i++ {
		k := fmt.Sprintf("flow-key-%d", i)
		s, err := ring.PickShard(cat, name, k)
		require.NoError(t, err)
		if s == shard {
			keys = append(keys, k)
		}
	}
	require.Len(t, keys, n, "keys on shard %d", shard)
	return keys
}

// A shard drained while it holds a queued run: the drain stops new
// placement only (read_only once the window passed), and the queued run
// still gets its slot and completes there.
func TestFlowSurvivesDrain(t *testing.T) {
	c := newRaftCluster(t, 2, 2, 2*time.Second)
	var ids []string
	for i, key := range keysOn(t, demo.ReportName, c.cat, 1, demo.ReportMaxRunning+1) {
		r := call(t, c.nodes[i%2], "POST", "/workflows/"+demo.ReportName+"/start",
			map[string]any{"input": map[string]any{"customer": "drain-c", "sleep_ms": 3000}}, "Idempotency-Key", key)
		require.Equal(t, http.StatusCreated, r.Status, "%v", r.Body)
		want := map[bool]string{true: "RUNNING", false: "QUEUED"}[i < demo.ReportMaxRunning]
		require.Equal(t, want, r.Body["state"], "start %d", i)
		ids = append(ids, fmt.Sprint(r.Body["execution_id"]))
	}
	d := call(t, c.nodes[1], "POST", "/admin/shards/1/drain", nil)
	require.Equal(t, http.StatusAccepted, d.Status, "%v", d.Body)
	queued := ids[len(ids)-1]
	x := call(t, c.nodes[0], "GET", "/workflows/"+queued, nil)
	require.Equal(t, "QUEUED", x.Body["execution"].(map[string]any)["state"], "queued when the drain began")
	eventually(t, "shard 1 read_only", 30*time.Second, func() bool {
		return call(t, c.nodes[0], "GET", "/admin/shards/1", nil).Body["state"] == "read_only"
	})
	for _, id := range ids {
		r := call(t, c.nodes[1], "GET", "/workflows/"+id+"/result?wait=20s", nil)
		require.Equal(t, http.StatusOK, r.Status, "%v", r.Body)
		require.Equal(t, "COMPLETED", r.Body["state"])
		require.Equal(t, "report for drain-c", r.Body["output"])
	}
}

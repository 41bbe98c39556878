package node

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A continue-as-new chain on a 3-node cluster: every node routes the
// chain's old run id to its shard's owner, where a signal to it lands on
// the current run (once per key, whichever node a retry goes through), a
// keyed start's replay names the latest run, and a result waited on
// through another node follows the chain to its end.
func TestContinueAsNewAcrossNodes(t *testing.T) {
	c := newCluster(t, 3, 5*time.Second)
	nodes := c.live()
	first := call(t, nodes[0], "POST", "/workflows/counter/start", map[string]any{"input": map[string]any{"every": 1, "until": 3}},
		"Idempotency-Key", "chain-evt")
	require.Equal(t, http.StatusCreated, first.Status, "%v", first.Body)
	id := fmt.Sprint(first.Body["execution_id"])
	signal := func(n *Node, sig string) reply {
		r := call(t, n, "POST", "/workflows/"+id+"/signal/add", map[string]any{"id": sig, "n": 1}, "Idempotency-Key", "sig-"+sig)
		require.Equal(t, http.StatusAccepted, r.Status, "%v", r.Body)
		return r
	}
	require.Equal(t, true, signal(nodes[1], "a").Body["signal_delivered"])
	var next string
	eventually(t, "the first run to continue", 20*time.Second, func() bool {
		x := call(t, nodes[2], "GET", "/workflows/"+id, nil).Body["execution"].(map[string]any)
		next, _ = x["continued_to"].(string)
		return next != ""
	})
	for _, n := range nodes {
		require.Equal(t, false, signal(n, "a").Body["signal_delivered"], "a retry through %s", n.NodeID())
	}
	replay := call(t, nodes[2], "POST", "/workflows/counter/start", map[string]any{"input": map[string]any{"until": 3}},
		"Idempotency-Key", "chain-evt")
	require.Equal(t, http.StatusOK, replay.Status)
	require.Equal(t, id, replay.Body["execution_id"])
	require.Equal(t, next, replay.Body["latest_execution_id"])

	done := make(chan reply, 1)
	go func() { done <- call(t, nodes[1], "GET", "/workflows/"+id+"/result?wait=20s", nil) }()
	moved := signal(nodes[0], "b")
	require.Equal(t, next, moved.Body["current_execution_id"])
	eventually(t, "the second run to continue", 20*time.Second, func() bool {
		x := call(t, nodes[0], "GET", "/workflows/"+next, nil).Body["execution"].(map[string]any)
		return x["continued_to"] != nil
	})
	signal(nodes[2], "c")
	r := <-done
	require.Equal(t, http.StatusOK, r.Status, "%v", r.Body)
	require.Equal(t, "COMPLETED", r.Body["state"])
	require.Equal(t, []any{"a", "b", "c"}, r.Body["output"].(map[string]any)["ids"])
	require.Equal(t, 3, c.runsCount(t, "workflow_id = $1", first.Body["workflow_id"]), "one run per link")
}

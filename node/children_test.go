package node

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/demo"
	"github.com/harvestd/harvest/engine"
)

// A parent's children land on other shards and nodes of a 3-node cluster:
// each child's keyed start, and its close's keyed signal back to the
// parent, cross the authenticated node-to-node path.
func TestChildrenAcrossTheCluster(t *testing.T) {
	c := newCluster(t, 3, 5*time.Second)
	const n = demo.ParentChainMax // with 4 shards on 3 nodes, some child is on another node
	r := call(t, c.nodes[0], "POST", "/workflows/"+demo.ParentChainName+"/start?wait=30s",
		map[string]any{"input": map[string]any{"children": n, "activities": 1}})
	require.Equal(t, http.StatusCreated, r.Status, "%v", r.Body)
	result, ok := r.Body["result"].(map[string]any)
	require.True(t, ok, "the parent closed within the wait: %v", r.Body)
	require.Equal(t, "COMPLETED", result["state"], "%v", result)
	require.EqualValues(t, n, result["output"])

	parent := fmt.Sprint(r.Body["execution_id"])
	parentNode := c.owner(shardOf(t, parent)).NodeID()
	children := c.childIDs(t, parent)
	require.Len(t, children, n, "one child per child command")
	elsewhere := 0
	for _, id := range children {
		if c.owner(shardOf(t, id)).NodeID() != parentNode {
			elsewhere++
		}
		types := c.eventTypes(t, id)
		require.Equal(t, string(harvest.EventWorkflowCompleted), types[len(types)-1])
	}
	require.Positive(t, elsewhere, "some child runs on another node than its parent")
	types := c.eventTypes(t, parent)
	require.Equal(t, n, countType(types, harvest.EventChildWorkflowInitiated))
	require.Equal(t, n, countType(types, harvest.EventSignalReceived), "one close report per child")

	t.Run("SignalExternalAcrossNodes", func(t *testing.T) {
		order := call(t, c.nodes[1], "POST", "/workflows/approval_race/start",
			map[string]any{"input": map[string]any{"timeout_ms": 600000, "auto_approve_ms": 600000}})
		require.Equal(t, http.StatusCreated, order.Status, "%v", order.Body)
		id := fmt.Sprint(order.Body["execution_id"])
		a := call(t, c.nodes[2], "POST", "/workflows/"+demo.ApproverName+"/start?wait=30s",
			map[string]any{"input": map[string]any{"order": id, "by": "ops"}})
		require.Equal(t, http.StatusCreated, a.Status, "%v", a.Body)
		require.Equal(t, "approved", a.Body["result"].(map[string]any)["output"], "%v", a.Body)
		require.Equal(t, 1, countType(c.eventTypes(t, id), harvest.EventSignalReceived))
	})
	// The approver signals an order by its workflow id, placed on a shard
	// of another node: the id resolves there over the signed probe route.
	t.Run("SignalExternalWorkflowAcrossNodes", func(t *testing.T) {
		// The approver and the order on shards of two different nodes.
		first := c.cat.Readable[0]
		other := slices.IndexFunc(c.cat.Readable, func(s uint16) bool { return c.owner(s).NodeID() != c.owner(first).NodeID() })
		require.GreaterOrEqual(t, other, 0, "some shard is on another node")
		sender := c.owner(first)
		wf := keyOn(t, "approval_race", c.cat, c.cat.Readable[other], nil, 0)
		approverID := keyOn(t, demo.ApproverName, c.cat, first, nil, 0)
		order := call(t, c.nodes[0], "POST", "/workflows/approval_race/start",
			map[string]any{"workflow_id": wf, "input": map[string]any{"timeout_ms": 600000, "auto_approve_ms": 600000}})
		require.Equal(t, http.StatusCreated, order.Status, "%v", order.Body)
		id := fmt.Sprint(order.Body["execution_id"])
		a := call(t, sender, "POST", "/workflows/"+demo.ApproverName+"/start?wait=30s",
			map[string]any{"workflow_id": approverID, "input": map[string]any{"order_workflow": "approval_race", "order_workflow_id": wf, "by": "ops"}})
		require.Equal(t, http.StatusCreated, a.Status, "%v", a.Body)
		require.Equal(t, "approved", a.Body["result"].(map[string]any)["output"], "%v", a.Body)
		approver := fmt.Sprint(a.Body["execution_id"])
		require.NotEqual(t, c.owner(shardOf(t, approver)).NodeID(), c.owner(shardOf(t, id)).NodeID(), "the order is on another node")
		require.Equal(t, 1, countType(c.eventTypes(t, id), harvest.EventSignalReceived))
		require.Equal(t, 1, countType(c.eventTypes(t, approver), harvest.EventExternalSignalDelivered))
	})
}

// childIDs lists the runs started under a child key of parent, on every
// shard.
func (c *cluster) childIDs(t *testing.T, parent string) []string {
	var out []string
	for _, dsn := range c.dsns {
		out = append(out, queryStrings(t, dsn, `SELECT execution_id::text FROM harvest_executions WHERE idempotency_key LIKE $1`,
			"hv:child:"+parent+":%")...)
	}
	slices.Sort(out)
	return out
}

func countType(types []string, want harvest.EventType) int {
	n := 0
	for _, s := range types {
		if s == string(want) {
			n++
		}
	}
	return n
}

// A drain of the child's shard between the outbox's first and second
// start attempt of one child (the first answered but not recorded) still
// yields one child: the second attempt, placed by the new catalog on
// another shard, finds the first run by the placement epochs.
func TestChildStartSurvivesDrain(t *testing.T) {
	c := newRaftCluster(t, 3, 2, time.Hour)
	wf := keyOn(t, demo.NoopChainName, c.cat, 1, nil, 0)
	req := engine.StartRequest{WorkflowName: demo.NoopChainName, WorkflowID: wf, Input: []byte(`{"activities":0}`),
		IdempotencyKey: harvest.ChildStartKey("parent-of-"+wf, "1"), ConflictPolicy: engine.ConflictFail}
	first, err := c.nodes[2].outbound.Start(ctxT(t), req)
	require.NoError(t, err)
	require.Equal(t, uint16(1), engine.ShardOf(first.ExecutionID))

	d := call(t, c.nodes[1], "POST", "/admin/shards/1/drain", nil)
	require.Equal(t, http.StatusAccepted, d.Status, "%v", d.Body)
	c.waitWritable(t, 1)

	for _, n := range c.nodes {
		again, err := n.outbound.Start(ctxT(t), req)
		require.NoError(t, err)
		require.Equal(t, first.ExecutionID, again.ExecutionID)
		require.True(t, again.Deduplicated)
	}
	require.Equal(t, 1, c.runsCount(t, "workflow_id = $1", wf), "one child")
}

func queryStrings(t *testing.T, dsn, sql string, args ...any) []string {
	conn, err := pgx.Connect(ctxT(t), dsn)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctxT(t), sql, args...)
	require.NoError(t, err)
	var out []string
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		out = append(out, s)
	}
	require.NoError(t, rows.Err())
	return out
}

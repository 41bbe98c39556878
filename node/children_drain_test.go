package node

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/demo"
	"github.com/harvestd/harvest/engine"
	"github.com/harvestd/harvest/ring"
)

// errAnswerLost is the answer a lossyOutbound loses.
var errAnswerLost = errors.New("test: the start's answer was lost")

// startGate loses the answer of the first keyed start of one child
// workflow id, as a crash between the start and its record would
// (crash point outbox.performed), and holds every later attempt until
// open is closed.
type startGate struct {
	workflowID atomic.Pointer[string]
	answered   chan struct{} // closed when the first start was answered
	open       chan struct{}
	first      atomic.Pointer[engine.StartResult]
	retries    atomic.Int32 // attempts performed after open
}

func newStartGate() *startGate {
	g := &startGate{answered: make(chan struct{}), open: make(chan struct{})}
	g.workflowID.Store(new(string))
	return g
}

// wrap is a node's Config.wrapOutbound.
func (g *startGate) wrap(o engine.Outbound) engine.Outbound { return &gatedOutbound{Outbound: o, g: g} }

// gatedOutbound is one node's Outbound under the gate.
type gatedOutbound struct {
	engine.Outbound
	g *startGate
}

func (o *gatedOutbound) Start(ctx context.Context, req engine.StartRequest) (engine.StartResult, error) {
	g := o.g
	if req.WorkflowID != *g.workflowID.Load() {
		return o.Outbound.Start(ctx, req)
	}
	if g.first.Load() == nil {
		res, err := o.Outbound.Start(ctx, req)
		if err != nil || !g.first.CompareAndSwap(nil, &res) {
			return res, err
		}
		close(g.answered)
		return engine.StartResult{}, errAnswerLost
	}
	select {
	case <-g.open:
	case <-ctx.Done():
		return engine.StartResult{}, ctx.Err()
	}
	g.retries.Add(1)
	return o.Outbound.Start(ctx, req)
}

// A parent's child start goes through the real outbox: its first attempt
// starts the child on shard 1 but the answer is lost, shard 1 is drained
// (the current placement puts the child's workflow id on shard 0), and
// the outbox's retry, routed by the new catalog, finds the first run by
// the placement epochs: one child run, the one the parent records.
func TestChildStartThroughTheOutboxSurvivesDrain(t *testing.T) {
	gate := newStartGate()
	c := newRaftClusterWindows(t, 2, []time.Duration{time.Hour, time.Hour, time.Hour}, func(cfg *Config) { cfg.wrapOutbound = gate.wrap })
	prefix := childPrefixOn(t, c.cat, 1)
	child := prefix + "-0"
	gate.workflowID.Store(&child)
	parentID := keyOn(t, demo.ParentChainName, c.cat, 0, nil, 0)
	r := call(t, c.nodes[0], "POST", "/workflows/"+demo.ParentChainName+"/start", map[string]any{"workflow_id": parentID,
		"input": map[string]any{"children": 1, "activities": 0, "child_workflow_id": prefix}})
	require.Equal(t, http.StatusCreated, r.Status, "%v", r.Body)
	parent := fmt.Sprint(r.Body["execution_id"])
	select {
	case <-gate.answered:
	case <-time.After(30 * time.Second):
		t.Fatal("the outbox never started the child")
	}
	first := gate.first.Load()
	require.Equal(t, uint16(1), engine.ShardOf(first.ExecutionID), "the first attempt placed the child on shard 1")

	d := call(t, c.nodes[1], "POST", "/admin/shards/1/drain", nil)
	require.Equal(t, http.StatusAccepted, d.Status, "%v", d.Body)
	c.waitWritable(t, 1)
	now, err := ring.PickShard(c.cat, demo.NoopChainName, child)
	require.NoError(t, err)
	require.Equal(t, uint16(0), now, "the new catalog places the child elsewhere")
	close(gate.open)

	res := call(t, c.nodes[2], "GET", "/workflows/"+parent+"/result?wait=30s", nil)
	require.Equal(t, http.StatusOK, res.Status, "%v", res.Body)
	require.Equal(t, "COMPLETED", res.Body["state"], "%v", res.Body)
	// The child closes (and reports to its parent) while its start is
	// held: the parent may close first. The retry's answer is recorded in
	// the parent's children row, closed or not.
	parentDSN := c.dsns[shardOf(t, parent)]
	recorded := func() []string {
		return queryStrings(t, parentDSN, `
			SELECT child_execution_id::text FROM harvest_children WHERE parent_execution_id = $1 AND child_execution_id IS NOT NULL`,
			uuid.MustParse(parent))
	}
	eventually(t, "the retried start recorded", 30*time.Second, func() bool { return len(recorded()) == 1 })
	require.Equal(t, []string{first.ExecutionID.String()}, recorded(), "the parent recorded the first run")
	require.Positive(t, gate.retries.Load(), "the outbox retried after the drain")
	require.Equal(t, 1, c.runsCount(t, "workflow_id = $1", child), "one child run")
	require.Equal(t, []string{first.ExecutionID.String()}, c.childIDs(t, parent), "the first run is the child")
	eventually(t, "an empty outbox", 30*time.Second, func() bool {
		return len(queryStrings(t, parentDSN, `SELECT kind FROM harvest_outbox`)) == 0
	})
}

// childPrefixOn finds a child workflow id prefix whose first child
// ("<prefix>-0") the catalog places on shard.
func childPrefixOn(t *testing.T, cat ring.Catalog, shard uint16) string {
	for i := range 100000 {
		p := fmt.Sprintf("drained-%d", i)
		if s, err := ring.PickShard(cat, demo.NoopChainName, p+"-0"); err == nil && s == shard {
			return p
		}
	}
	t.Fatal("no prefix found")
	return ""
}

package node

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/internal/testworkflows"
	"github.com/harvestd/harvest/ring"
)

// relayStep is the relay workflow's activity.
var relayStep = harvest.NewActivity("relay_step", func(_ *harvest.ActivityContext, i int) (int, error) { return i + 1, nil })

// relayWF runs five steps, sleeps, waits for a "go" signal, and runs five
// more, while a coroutine counts "note" signals.
var relayWF = harvest.NewWorkflow("relay", func(ctx harvest.Context, _ struct{}) (int, error) {
	sum, notes := 0, 0
	harvest.Go(ctx, func(ctx harvest.Context) {
		for {
			if _, err := harvest.NewSignal[string]("note").Receive(ctx); err != nil {
				return
			}
			notes++
		}
	})
	for i := range 10 {
		if i == 5 {
			if err := harvest.Sleep(ctx, 10*time.Millisecond); err != nil {
				return 0, err
			}
			if _, err := harvest.NewSignal[string]("go").Receive(ctx); err != nil {
				return 0, err
			}
		}
		v, err := relayStep.Execute(ctx, i).Get(ctx)
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return sum*100 + notes, nil
})

// TestClusterStateCacheAcrossOwnerChange runs a workflow half-way on its
// shard's owner, from cached state, hands the shard over, and runs the
// rest on the new owner, which rebuilds the state by replay: the result is
// what the code computes, and a full replay of every prefix of the history
// issues exactly the commands that were recorded.
func TestClusterStateCacheAcrossOwnerChange(t *testing.T) {
	c := newCluster(t, 3, 5*time.Second, relayStep, relayWF)
	vi, shard := c.victim(t)
	victim, entry := c.nodes[vi], c.nodes[0]
	wfID, err := ring.MintForShard(c.cat, "relay", shard, uuid.NewString)
	require.NoError(t, err)
	r := call(t, entry, "POST", "/workflows/relay/start", map[string]any{"workflow_id": wfID, "input": map[string]any{}})
	require.Equal(t, http.StatusCreated, r.Status, "%v", r.Body)
	id := fmt.Sprint(r.Body["execution_id"])
	signal := func(name string) {
		eventually(t, "the "+name+" signal", 10*time.Second, func() bool {
			return call(t, entry, "POST", "/workflows/"+id+"/signal/"+name, "n").Status == http.StatusAccepted
		})
	}
	signal("note")
	eventually(t, "the go wait", 20*time.Second, func() bool {
		types := c.eventTypes(t, id)
		return len(types) > 0 && types[len(types)-1] == string(harvest.EventTimerFired)
	})
	old, ok := victim.mgr.Engine(shard)
	require.True(t, ok)
	eventually(t, "the old owner's cache", 10*time.Second, func() bool { return old.StateCacheStats().Entries == 1 })
	require.Positive(t, old.StateCacheStats().Hits, "the first half ran on cached state")
	require.Zero(t, old.StateCacheStats().Rebuilds, "no cached step failed over to a replay")

	require.NoError(t, victim.Stop(context.Background()))
	c.nodes[vi] = nil
	eventually(t, "the new owner", 10*time.Second, func() bool { return c.owner(shard) != nil })
	signal("note")
	signal("go")
	res := call(t, entry, "GET", "/workflows/"+id+"/result?wait=20s", nil)
	require.Equal(t, "COMPLETED", res.Body["state"], "%v", res.Body)
	require.Equal(t, 5502.0, res.Body["output"], "steps 1..10 summed, two notes")
	successor, ok := c.owner(shard).mgr.Engine(shard)
	require.True(t, ok)
	require.Positive(t, successor.StateCacheStats().Misses, "the new owner rebuilt the state")

	history := c.history(t, id)
	info := harvest.WorkflowInfo{ExecutionID: id, WorkflowName: "relay", WorkflowID: wfID}
	require.NoError(t, testworkflows.ReplayAgrees(ctxT(t), c.reg, info, history))
}

// history reads a run's events straight from its shard database.
func (c *cluster) history(t *testing.T, execID string) []harvest.Event {
	conn, err := pgx.Connect(ctxT(t), c.dsns[shardOf(t, execID)])
	require.NoError(t, err)
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctxT(t), `SELECT event_id, event_type, data, created_at FROM harvest_events
		WHERE execution_id = $1 ORDER BY event_id`, execID)
	require.NoError(t, err)
	events, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (harvest.Event, error) {
		var ev harvest.Event
		var typ string
		err := row.Scan(&ev.EventID, &typ, &ev.Data, &ev.Timestamp)
		ev.Type = harvest.EventType(typ)
		return ev, err
	})
	require.NoError(t, err)
	return events
}

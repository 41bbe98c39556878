package node

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/admin"
	"github.com/harvestd/harvest/demo"
)

// TestSchedulesInTheCatalog: on a raft cluster a schedule's definition is
// raft catalog state (every node's replica has it), its cursor and fires
// live on the schedules shard: created through any node it fires, a
// delete leaves a marker, a re-creation fires under generation 2 with no
// key of generation 1 run twice, and a definition the catalog holds whose
// copy never reached the shard (a crash between the two) still fires.
func TestSchedulesInTheCatalog(t *testing.T) {
	c := newRaftCluster(t, 3, 2, time.Hour)
	c.waitStable()
	tick := map[string]any{"schedule_id": "cat", "workflow_name": demo.NoopChainName,
		"input": map[string]any{"activities": 0}, "interval": "1s", "overlap": "allow_all"}
	everyReplica := func(t *testing.T, what string, ok func(admin.ScheduleDef, bool) bool) {
		t.Helper()
		eventually(t, what, 20*time.Second, func() bool {
			for _, n := range c.live() {
				d, found := n.admin.Catalog().Schedules["cat"]
				if !ok(d, found) {
					return false
				}
			}
			return true
		})
	}

	t.Run("CreatedThroughAnyNodeItIsCatalogStateAndFires", func(t *testing.T) {
		r := call(t, c.nodes[1], "POST", "/schedules", tick)
		require.Equal(t, http.StatusCreated, r.Status, "%v", r.Body)
		require.EqualValues(t, 1, r.Body["generation"])
		everyReplica(t, "every replica to hold generation 1", func(d admin.ScheduleDef, found bool) bool {
			return found && d.Generation == 1 && !d.Deleted
		})
		c.waitStarted(t, 2)
		again := call(t, c.nodes[2], "POST", "/schedules", tick)
		require.Equal(t, http.StatusConflict, again.Status, "a live id: %v", again.Body)
		d := call(t, c.nodes[0], "GET", "/schedules/cat", nil)
		require.Equal(t, http.StatusOK, d.Status, "%v", d.Body)
		require.NotEmpty(t, d.Body["recent_fires"], "the fires come from the shard")
	})

	t.Run("DeleteLeavesAMarkerAndCreateAgainIsGeneration2", func(t *testing.T) {
		require.Equal(t, http.StatusOK, call(t, c.nodes[2], "DELETE", "/schedules/cat", nil).Status)
		everyReplica(t, "every replica to hold the marker", func(d admin.ScheduleDef, found bool) bool {
			return found && d.Deleted && d.Generation == 1
		})
		require.Equal(t, http.StatusNotFound, call(t, c.nodes[0], "GET", "/schedules/cat", nil).Status)
		before := len(c.scheduleKeys(t))
		r := call(t, c.nodes[0], "POST", "/schedules", tick)
		require.Equal(t, http.StatusCreated, r.Status, "%v", r.Body)
		require.EqualValues(t, 2, r.Body["generation"])
		c.waitStarted(t, before+2)
		perKey := map[string]int{}
		second := 0
		for _, k := range c.scheduleKeys(t) {
			perKey[k]++
			if strings.HasPrefix(k, "hv:sched:cat:2:") {
				second++
			}
		}
		for k, n := range perKey {
			require.Equal(t, 1, n, "runs of %s", k)
		}
		require.Positive(t, second, "generation 2 fires under its own keys")
	})

	t.Run("ACatalogDefinitionWithoutItsCopyStillFires", func(t *testing.T) {
		var leader *Node
		for _, n := range c.live() {
			if n.admin.IsLeader() {
				leader = n
			}
		}
		require.NotNil(t, leader)
		spec, err := json.Marshal(map[string]any{"workflow_name": demo.NoopChainName, "input": map[string]any{"activities": 0},
			"interval": int64(time.Second), "overlap": "allow_all"})
		require.NoError(t, err)
		// The catalog change alone, as if the node crashed before its copy.
		require.NoError(t, leader.admin.Apply(ctxT(t), admin.PutSchedule{ID: "orphan", Spec: spec}))
		eventually(t, "the orphan's runs", 60*time.Second, func() bool {
			for _, k := range c.scheduleKeys(t) {
				if strings.HasPrefix(k, "hv:sched:orphan:1:") {
					return true
				}
			}
			return false
		})
	})
}

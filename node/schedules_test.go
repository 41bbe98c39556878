package node

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/demo"
)

// A schedule firing every second on a 3-node raft cluster keeps exactly
// one run per nominal time, and no gap, while its shard (the schedules
// shard, 0) is drained and then while the node firing it is killed at a
// fire (its successor takes the lease over and catches up).
func TestScheduleSurvivesDrainAndKill(t *testing.T) {
	c := newRaftCluster(t, 3, 3, time.Hour)
	r := call(t, c.nodes[1], "POST", "/schedules", map[string]any{"schedule_id": "tick", "workflow_name": demo.NoopChainName,
		"input": map[string]any{"activities": 0}, "interval": "1s", "overlap": "allow_all"})
	require.Equal(t, http.StatusCreated, r.Status, "%v", r.Body)
	c.waitStarted(t, 3)

	d := call(t, c.nodes[2], "POST", "/admin/shards/0/drain", nil)
	require.Equal(t, http.StatusAccepted, d.Status, "%v", d.Body)
	c.waitWritable(t, 2)
	before := c.waitStarted(t, len(c.scheduleKeys(t))+3)

	firing := slices.IndexFunc(c.nodes, func(n *Node) bool { return slices.Contains(n.Owned(), 0) })
	require.GreaterOrEqual(t, firing, 0, "a node fires the schedule")
	c.waitPendingFire(t)
	c.kill(firing)
	entry := c.live()[0]
	c.waitStarted(t, before+8) // the successor took the lease (5 s) and caught up

	require.Equal(t, http.StatusOK, call(t, entry, "DELETE", "/schedules/tick", nil).Status)
	eventually(t, "the pending fires performed", 20*time.Second, func() bool {
		return len(queryStrings(t, c.dsns[0], `SELECT command_id FROM harvest_outbox WHERE kind = 'schedule_start'`)) == 0
	})
	keys := c.scheduleKeys(t)
	perKey := map[string]int{}
	for _, k := range keys {
		perKey[k]++
	}
	var nominals []time.Time
	for k, n := range perKey {
		require.Equal(t, 1, n, "runs of %s", k)
		at, err := time.Parse("2006-01-02T15:04:05.000Z", strings.TrimPrefix(k, "hv:sched:tick:1:"))
		require.NoError(t, err, k)
		nominals = append(nominals, at)
	}
	slices.SortFunc(nominals, func(a, b time.Time) int { return a.Compare(b) })
	for i := 1; i < len(nominals); i++ {
		require.Equal(t, time.Second, nominals[i].Sub(nominals[i-1]), "no nominal time is missing before %s", nominals[i])
	}
	shards := map[string]bool{}
	for _, s := range c.dsns {
		if len(queryStrings(t, s, `SELECT execution_id::text FROM harvest_executions WHERE idempotency_key LIKE 'hv:sched:tick:%'`)) > 0 {
			shards[s] = true
		}
	}
	require.Greater(t, len(shards), 1, "the runs spread over the shards")
}

// scheduleKeys lists the key of every run a schedule started, on every
// shard (a key twice if it has two runs).
func (c *cluster) scheduleKeys(t *testing.T) []string {
	var out []string
	for _, dsn := range c.dsns {
		out = append(out, queryStrings(t, dsn, `SELECT idempotency_key FROM harvest_executions WHERE idempotency_key LIKE 'hv:sched:%'`)...)
	}
	return out
}

// waitStarted waits until the schedules started n runs and returns how
// many they started.
func (c *cluster) waitStarted(t *testing.T, n int) int {
	got := 0
	eventually(t, "the schedule's runs", 60*time.Second, func() bool {
		got = len(c.scheduleKeys(t))
		return got >= n
	})
	return got
}

// waitPendingFire waits (a few seconds at most) until a fire's start is
// in the outbox: the moment to kill the firing node.
func (c *cluster) waitPendingFire(t *testing.T) {
	conn, err := pgx.Connect(ctxT(t), c.dsns[0])
	require.NoError(t, err)
	defer conn.Close(context.Background())
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		var n int
		require.NoError(t, conn.QueryRow(ctxT(t), `SELECT count(*) FROM harvest_outbox WHERE kind = 'schedule_start'`).Scan(&n))
		if n > 0 {
			return
		}
	}
}

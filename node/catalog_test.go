package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/admin"
	"github.com/harvestd/harvest/api"
	"github.com/harvestd/harvest/demo"
	"github.com/harvestd/harvest/internal/clusterkey/clusterkeytest"
	"github.com/harvestd/harvest/internal/pgtest"
	"github.com/harvestd/harvest/membership"
	"github.com/harvestd/harvest/ring"
)

// fastRaft is raft's timing for tests: a short commit timeout, and
// heartbeat, election and lease timeouts longer than raft's defaults
// (1 s, 1 s, 500 ms). Shorter ones made leaders come and go on a busy
// machine (a lease of 500 ms lapses when the race detector and other
// packages' tests starve the followers), and with them the admin calls of
// tests that are about something else.
func fastRaft() *raft.Config {
	rc := raft.DefaultConfig()
	rc.HeartbeatTimeout = 2 * time.Second
	rc.ElectionTimeout = 2 * time.Second
	rc.LeaderLeaseTimeout = time.Second
	rc.CommitTimeout = 20 * time.Millisecond
	return rc
}

// newRaftCluster starts size nodes with a raft catalog seeded with shards
// initial of the given databases; window is the idempotency window.
func newRaftCluster(t *testing.T, size, initial int, window time.Duration) *cluster {
	t.Helper()
	windows := make([]time.Duration, size)
	for i := range windows {
		windows[i] = window
	}
	return newRaftClusterWindows(t, initial, windows)
}

// newRaftClusterWindows is newRaftCluster with each node's own
// --idempotency-window.
func newRaftClusterWindows(t *testing.T, initial int, windows []time.Duration, opts ...func(*Config)) *cluster {
	t.Helper()
	size := len(windows)
	c := &cluster{t: t, dsns: map[uint16]string{}, reg: harvest.NewRegistry(), svc: demo.NewServices(), ttl: 5 * time.Second}
	require.NoError(t, demo.New(c.svc).Register(c.reg))
	for s := range uint16(initial) {
		c.dsns[s] = pgtest.NewDB(t)
	}
	for i := range size {
		c.nodes = append(c.nodes, c.startRaftNode(t, i, size, windows[i], opts...))
	}
	eventually(t, "a catalog on every node", 20*time.Second, func() bool {
		for _, n := range c.nodes {
			if len(n.admin.Catalog().Shards) != initial {
				return false
			}
		}
		return true
	})
	c.refreshCatalog()
	c.waitStable()
	return c
}

// startRaftNode starts node "n<i>" with a raft catalog, joining node 0
// unless it is node 0; expect is its BootstrapExpect (0: wait for the
// leader to add it).
func (c *cluster) startRaftNode(t *testing.T, i, expect int, window time.Duration, opts ...func(*Config)) *Node {
	t.Helper()
	var join []string
	if i > 0 {
		join = []string{c.nodes[0].GossipAddr()}
	}
	cfg := Config{
		NodeID: fmt.Sprintf("n%d", i), DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", Shards: c.dsns,
		Gossip:            &membership.Config{BindAddr: "127.0.0.1", Join: join, Profile: membership.ProfileLocal, RejoinInterval: 500 * time.Millisecond},
		ClusterKey:        clusterkeytest.Key(),
		Raft:              &RaftConfig{BindAddr: "127.0.0.1:0", BootstrapExpect: expect, DrainCheckInterval: 200 * time.Millisecond, Raft: fastRaft()},
		IdempotencyWindow: window, PollInterval: 20 * time.Millisecond, LeaseTTL: c.ttl, Logger: zerolog.Nop(),
	}
	for _, o := range opts {
		o(&cfg)
	}
	n, err := New(cfg, c.reg)
	require.NoError(t, err)
	require.NoError(t, n.Start(ctxT(t)))
	t.Cleanup(func() { _ = n.Stop(context.Background()) })
	return n
}

// waitWritable waits until every node's catalog has n writable shards.
func (c *cluster) waitWritable(t *testing.T, n int) {
	eventually(t, "the catalog change on every node", 10*time.Second, func() bool {
		for _, nd := range c.nodes {
			if len(nd.admin.Catalog().Current().Writable) != n {
				return false
			}
		}
		return true
	})
	c.refreshCatalog()
}

func (c *cluster) refreshCatalog() {
	c.cat = c.nodes[0].admin.Catalog().Current()
}

// keyOn finds an idempotency key of workflow name that routes to shard
// under cat (and, when other is non-nil, to otherShard under other).
func keyOn(t *testing.T, name string, cat ring.Catalog, shard uint16, other *ring.Catalog, otherShard uint16) string {
	for i := range 100000 {
		k := fmt.Sprintf("key-%d", i)
		s, err := ring.PickShard(cat, name, k)
		require.NoError(t, err)
		if s != shard {
			continue
		}
		if other != nil {
			if o, _ := ring.PickShard(*other, name, k); o != otherShard {
				continue
			}
		}
		return k
	}
	t.Fatal("no key found")
	return ""
}

func (c *cluster) runsCount(t *testing.T, where string, args ...any) int {
	total := 0
	for _, dsn := range c.dsns {
		conn, err := pgx.Connect(ctxT(t), dsn)
		require.NoError(t, err)
		var n int
		require.NoError(t, conn.QueryRow(ctxT(t), `SELECT count(*) FROM harvest_executions WHERE `+where, args...).Scan(&n))
		conn.Close(context.Background())
		total += n
	}
	return total
}

func TestDedupSurvivesDrainAndAdd(t *testing.T) {
	parent := t
	c := newRaftCluster(t, 3, 2, time.Hour)
	entry := c.nodes[0]

	t.Run("KeyedRetryAfterDrain", func(t *testing.T) {
		key := keyOn(t, "onboarding", c.cat, 1, nil, 0)
		first := call(t, c.nodes[2], "POST", "/workflows/onboarding/start", map[string]any{"input": map[string]any{"user_id": 1}}, "Idempotency-Key", key)
		require.Equal(t, http.StatusCreated, first.Status, "%v", first.Body)
		require.Equal(t, uint16(1), shardOf(t, first.Body["execution_id"]))

		d := call(t, c.nodes[1], "POST", "/admin/shards/1/drain", nil)
		require.Equal(t, http.StatusAccepted, d.Status, "%v", d.Body)
		eventually(t, "the drain on every node", 10*time.Second, func() bool {
			for _, n := range c.nodes {
				if len(n.admin.Catalog().Current().Writable) != 1 {
					return false
				}
			}
			return true
		})
		c.refreshCatalog()
		now, _ := ring.PickShard(c.cat, "onboarding", key)
		require.Equal(t, uint16(0), now, "the key routes elsewhere after the drain")

		for _, n := range c.nodes {
			r := call(t, n, "POST", "/workflows/onboarding/start", map[string]any{"input": map[string]any{"user_id": 1}}, "Idempotency-Key", key)
			require.Equal(t, http.StatusOK, r.Status, "%v", r.Body)
			require.Equal(t, true, r.Body["deduplicated"])
			require.Equal(t, first.Body["execution_id"], r.Body["execution_id"])
		}
		require.Equal(t, 1, c.runsCount(t, "idempotency_key = $1", key), "no second run")

		wf := fmt.Sprint(first.Body["workflow_id"])
		rej := call(t, entry, "POST", "/workflows/onboarding/start", map[string]any{"workflow_id": wf, "reuse_policy": "reject_duplicate"})
		require.Equal(t, http.StatusConflict, rej.Status, "%v", rej.Body)
		require.Equal(t, first.Body["execution_id"], rej.Body["existing_execution_id"])

		u := call(t, entry, "POST", "/admin/shards/1/undrain", nil)
		require.Equal(t, http.StatusOK, u.Status, "%v", u.Body)
		c.waitWritable(t, 2)
	})

	t.Run("ExplicitWorkflowIDAfterDrain", func(t *testing.T) {
		wf := keyOn(t, "order", c.cat, 0, nil, 0)
		first := call(t, c.nodes[1], "POST", "/workflows/order/start", map[string]any{"workflow_id": wf, "input": map[string]any{"order_id": "x"}})
		require.Equal(t, http.StatusCreated, first.Status, "%v", first.Body)
		d := call(t, entry, "POST", "/admin/shards/0/drain", nil)
		require.Equal(t, http.StatusAccepted, d.Status, "%v", d.Body)
		eventually(t, "the drain", 10*time.Second, func() bool {
			for _, n := range c.nodes {
				if w := n.admin.Catalog().Current().Writable; len(w) != 1 || w[0] != 1 {
					return false
				}
			}
			return true
		})
		for _, n := range c.nodes {
			r := call(t, n, "POST", "/workflows/order/start", map[string]any{"workflow_id": wf, "reuse_policy": "reject_duplicate"})
			require.Equal(t, http.StatusConflict, r.Status, "%v", r.Body)
			require.Equal(t, first.Body["execution_id"], r.Body["existing_execution_id"])
			att := call(t, n, "POST", "/workflows/order/start", map[string]any{"workflow_id": wf})
			require.Equal(t, http.StatusOK, att.Status, "allow_duplicate attaches to the run on the drained shard: %v", att.Body)
			require.Equal(t, first.Body["execution_id"], att.Body["execution_id"])
		}
		require.Equal(t, 1, c.runsCount(t, "workflow_id = $1", wf))
		u := call(t, entry, "POST", "/admin/shards/0/undrain", nil)
		require.Equal(t, http.StatusOK, u.Status, "%v", u.Body)
		c.waitWritable(t, 2)
	})

	t.Run("KeyedRetryAfterShardAdd", func(t *testing.T) {
		eventually(t, "both shards writable on every node", 10*time.Second, func() bool {
			for _, n := range c.nodes {
				if len(n.admin.Catalog().Current().Writable) != 2 {
					return false
				}
			}
			return true
		})
		c.refreshCatalog()
		grown := ring.Catalog{Readable: []uint16{0, 1, 2}, Writable: []uint16{0, 1, 2}}
		key := keyOn(t, "onboarding", c.cat, 0, &grown, 2)
		first := call(t, entry, "POST", "/workflows/onboarding/start", map[string]any{"input": map[string]any{"user_id": 2}}, "Idempotency-Key", key)
		require.Equal(t, http.StatusCreated, first.Status, "%v", first.Body)

		c.dsns[2] = pgtest.NewDB(parent) // outlives this subtest
		add := call(t, c.nodes[1], "POST", "/admin/shards", map[string]any{"shard_id": 2, "dsn": c.dsns[2]})
		require.Equal(t, http.StatusCreated, add.Status, "%v", add.Body)
		eventually(t, "shard 2 served", 15*time.Second, func() bool { return c.owner(2) != nil })
		c.waitWritable(t, 3)
		for _, n := range c.nodes {
			r := call(t, n, "POST", "/workflows/onboarding/start", map[string]any{"input": map[string]any{"user_id": 2}}, "Idempotency-Key", key)
			require.Equal(t, http.StatusOK, r.Status, "%v", r.Body)
			require.Equal(t, first.Body["execution_id"], r.Body["execution_id"])
		}
		require.Equal(t, 1, c.runsCount(t, "idempotency_key = $1", key))
		fresh := call(t, entry, "POST", "/workflows/onboarding/start", map[string]any{"input": map[string]any{"user_id": 3}}, "Idempotency-Key", key+"-new")
		require.Equal(t, http.StatusCreated, fresh.Status)
	})

	// Two deliveries of one key straddling the shard add: one placed by a
	// node whose catalog still has the old epoch (shard 0), one by the new
	// epoch (shard 2). Whichever comes second must find the first.
	t.Run("StartsPlacedByAnOlderCatalog", func(t *testing.T) {
		cat := entry.admin.Catalog()
		require.GreaterOrEqual(t, len(cat.Epochs), 2)
		old, now := cat.Epochs[len(cat.Epochs)-2], cat.Epochs[len(cat.Epochs)-1]
		require.Equal(t, []uint16{0, 1}, old.Writable)
		oldCat, newCat := old.Placement(), now.Placement()
		owner0 := c.owner(0)
		require.NotNil(t, owner0)
		stale := func(key string) reply {
			return callAsNode(t, owner0, "POST", "/workflows/onboarding/start", map[string]any{"input": map[string]any{"user_id": 4}},
				"Idempotency-Key", key, api.ForwardedHeader, "stale-node", api.ShardHeader, "0",
				api.EpochHeader, fmt.Sprint(old.Number))
		}

		newFirst := otherKeyOn(t, "onboarding", oldCat, 0, newCat, 2)
		first := call(t, c.nodes[2], "POST", "/workflows/onboarding/start", map[string]any{"input": map[string]any{"user_id": 4}}, "Idempotency-Key", newFirst)
		require.Equal(t, http.StatusCreated, first.Status, "%v", first.Body)
		require.Equal(t, uint16(2), shardOf(t, first.Body["execution_id"]))
		late := stale(newFirst)
		require.Equal(t, http.StatusServiceUnavailable, late.Status, "the older placement is refused, not a second run: %v", late.Body)
		require.Equal(t, "unavailable", late.Body["code"])
		require.Equal(t, float64(now.Number), late.Body["placement_epoch"])
		require.Equal(t, 1, c.runsCount(t, "idempotency_key = $1", newFirst))

		oldFirst := otherKeyOn(t, "onboarding", oldCat, 0, newCat, 2, newFirst)
		early := stale(oldFirst)
		require.Equal(t, http.StatusCreated, early.Status, "%v", early.Body)
		require.Equal(t, uint16(0), shardOf(t, early.Body["execution_id"]))
		for _, n := range c.nodes {
			r := call(t, n, "POST", "/workflows/onboarding/start", map[string]any{"input": map[string]any{"user_id": 4}}, "Idempotency-Key", oldFirst)
			require.Equal(t, http.StatusOK, r.Status, "the newer placement finds the run on shard 0: %v", r.Body)
			require.Equal(t, early.Body["execution_id"], r.Body["execution_id"])
		}
		require.Equal(t, 1, c.runsCount(t, "idempotency_key = $1", oldFirst))
	})
}

// otherKeyOn is keyOn for a key outside used.
func otherKeyOn(t *testing.T, name string, cat ring.Catalog, shard uint16, other ring.Catalog, otherShard uint16, used ...string) string {
	for i := range 100000 {
		k := fmt.Sprintf("other-%d", i)
		if slices.Contains(used, k) {
			continue
		}
		s, err1 := ring.PickShard(cat, name, k)
		o, err2 := ring.PickShard(other, name, k)
		require.NoError(t, errors.Join(err1, err2))
		if s == shard && o == otherShard {
			return k
		}
	}
	t.Fatal("no key found")
	return ""
}

// TestEnginesUseTheCatalogWindow: nodes started with different
// --idempotency-window values all run their engines with the raft
// catalog's window.
func TestEnginesUseTheCatalogWindow(t *testing.T) {
	c := newRaftClusterWindows(t, 3, []time.Duration{time.Hour, 2 * time.Hour, 3 * time.Hour})
	want := c.nodes[0].admin.Catalog().Settings.Window()
	require.Contains(t, []time.Duration{time.Hour, 2 * time.Hour, 3 * time.Hour}, want, "a seeding node's window")
	served := 0
	for _, n := range c.nodes {
		require.Equal(t, want, n.admin.Catalog().Settings.Window())
		for _, s := range n.Owned() {
			e, ok := n.mgr.Engine(s)
			require.True(t, ok)
			require.Equal(t, want, e.IdempotencyWindow(), "node %s shard %d", n.NodeID(), s)
			served++
		}
	}
	require.Equal(t, 3, served, "every shard served once")
}

func TestDrainSafety(t *testing.T) {
	c := newRaftCluster(t, 3, 2, 2*time.Second)
	entry := c.nodes[0]

	t.Run("LastWritableNeedsForce", func(t *testing.T) {
		d := call(t, entry, "POST", "/admin/shards/0/drain", nil)
		require.Equal(t, http.StatusAccepted, d.Status, "%v", d.Body)
		r := call(t, c.nodes[2], "POST", "/admin/shards/1/drain", nil)
		require.Equal(t, http.StatusConflict, r.Status, "%v", r.Body)
		require.Equal(t, "unsafe_drain", r.Body["code"])
		require.Contains(t, r.Body["error"], "last writable")
		forced := call(t, c.nodes[2], "POST", "/admin/shards/1/drain", map[string]any{"force": true})
		require.Equal(t, http.StatusAccepted, forced.Status, "%v", forced.Body)
		require.Equal(t, true, forced.Body["forced"])
		eventually(t, "no writable shard on the entry node", 10*time.Second, func() bool {
			return len(entry.admin.Catalog().Current().Writable) == 0
		})
		s := call(t, entry, "POST", "/workflows/onboarding/start", map[string]any{"input": map[string]any{}})
		require.Equal(t, http.StatusServiceUnavailable, s.Status, "no writable shard: %v", s.Body)
		for _, id := range []string{"0", "1"} {
			u := call(t, entry, "POST", "/admin/shards/"+id+"/undrain", nil)
			require.Equal(t, http.StatusOK, u.Status, "%v", u.Body)
		}
	})

	t.Run("DrainFinishesToReadOnly", func(t *testing.T) {
		eventually(t, "both writable", 10*time.Second, func() bool { return len(entry.admin.Catalog().Current().Writable) == 2 })
		d := call(t, entry, "POST", "/admin/shards/1/drain", nil)
		require.Equal(t, http.StatusAccepted, d.Status, "%v", d.Body)
		eventually(t, "read_only after the 2s window", 15*time.Second, func() bool {
			r := call(t, entry, "GET", "/admin/shards/1", nil)
			return r.Body["state"] == "read_only"
		})
	})

	t.Run("UnreachableNeedsForce", func(t *testing.T) {
		conn, err := pgx.Connect(ctxT(t), c.dsns[0])
		require.NoError(t, err)
		defer conn.Close(context.Background())
		db := conn.Config().Database
		admin, err := pgx.Connect(ctxT(t), pgtest.ServerDSN("postgres"))
		require.NoError(t, err)
		defer admin.Close(context.Background())
		conn.Close(context.Background())
		_, err = admin.Exec(ctxT(t), fmt.Sprintf(`ALTER DATABASE %q WITH ALLOW_CONNECTIONS false`, db))
		require.NoError(t, err)
		_, err = admin.Exec(ctxT(t), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`, db)
		require.NoError(t, err)
		t.Cleanup(func() {
			_, _ = admin.Exec(context.Background(), fmt.Sprintf(`ALTER DATABASE %q WITH ALLOW_CONNECTIONS true`, db))
		})
		u := call(t, entry, "POST", "/admin/shards/1/undrain", nil) // shard 1 is read_only now
		require.Equal(t, http.StatusOK, u.Status, "%v", u.Body)
		r := call(t, entry, "POST", "/admin/shards/0/drain", nil)
		require.Equal(t, http.StatusConflict, r.Status, "%v", r.Body)
		require.Contains(t, r.Body["error"], "unreachable")
		forced := call(t, entry, "POST", "/admin/shards/0/drain", map[string]any{"force": true})
		require.Equal(t, http.StatusAccepted, forced.Status, "%v", forced.Body)
		require.Contains(t, forced.Body["risk"], "unreachable")
	})
}

// The admin package's errors become the API's, so each gets its status.
func TestCatalogAdminErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ from, to error }{
		{admin.ErrUnknownShard, api.ErrUnknownShard},
		{admin.ErrUnknownPeer, api.ErrUnknownPeer},
		{admin.ErrInvalidTransition, api.ErrInvalidTransition},
		{admin.ErrShardExists, api.ErrInvalidTransition},
		{admin.ErrRemoveLeader, api.ErrPeerIsLeader},
		{admin.ErrOutcomeUnknown, api.ErrOutcomeUnknown},
	} {
		t.Run(c.from.Error(), func(t *testing.T) {
			require.ErrorIs(t, catalogAdmin{}.leaderErr(fmt.Errorf("op: %w", c.from)), c.to)
		})
	}
	var le *api.LeaderError
	require.ErrorAs(t, catalogAdmin{}.leaderErr(&admin.NotLeaderError{LeaderID: "n2", LeaderAPIAddr: "127.0.0.1:1"}), &le)
	require.Equal(t, "http://127.0.0.1:1", le.URL)
}

// TestAddShardUnreachableIsNoOracle: adding a shard whose database cannot
// be used answers the same 422 whatever the dial error was, so the route
// cannot probe hosts and ports.
func TestAddShardUnreachableIsNoOracle(t *testing.T) {
	c := newRaftCluster(t, 1, 1, time.Hour)
	entry := c.nodes[0]
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go hangUpOnAccept(ln) // an open port that speaks no PostgreSQL
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closedAddr := closed.Addr().String()
	require.NoError(t, closed.Close()) // a port that refuses

	var answers []string
	for _, addr := range []string{closedAddr, ln.Addr().String()} {
		r := call(t, entry, "POST", "/admin/shards", map[string]any{"shard_id": 7,
			"dsn": "postgres://u:sekret@" + addr + "/db?connect_timeout=5"})
		require.Equal(t, http.StatusUnprocessableEntity, r.Status, "%v", r.Body)
		require.Equal(t, "shard_unreachable", r.Body["code"])
		msg := r.Body["error"].(string)
		for _, leak := range []string{"dial", "connection refused", "EOF", "sekret", addr, "failed to connect"} {
			require.NotContains(t, msg, leak)
		}
		answers = append(answers, msg)
	}
	require.Equal(t, answers[0], answers[1], "a refused port and an open one answer alike")

	r := call(t, entry, "POST", "/admin/shards", map[string]any{"shard_id": 7, "dsn": "postgres://u@[bad"})
	require.Equal(t, http.StatusBadRequest, r.Status, "%v", r.Body)
	require.Equal(t, "invalid_argument", r.Body["code"])
	require.Contains(t, r.Body["error"], "dsn")
}

func hangUpOnAccept(ln net.Listener) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		_ = conn.Close()
	}
}

// TestShardUnreachableLogsTheDetail: the dial error goes to the log at
// warn, without the DSN's password, and not into the returned error.
func TestShardUnreachableLogsTheDetail(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := zerolog.New(&buf)
	dialErr := errors.New("failed to connect to `host=10.9.8.7 user=u`: dial tcp 10.9.8.7:5433: connect: connection refused (sekret)")
	err := shardUnreachable(log, 7, "postgres://u:sekret@10.9.8.7:5433/db", dialErr)
	require.ErrorIs(t, err, api.ErrShardUnreachable)
	for _, leak := range []string{"10.9.8.7", "5433", "refused", "sekret"} {
		require.NotContains(t, err.Error(), leak)
	}
	line := buf.String()
	require.Contains(t, line, `"level":"warn"`)
	require.Contains(t, line, "connection refused")
	require.Contains(t, line, "10.9.8.7:5433")
	require.NotContains(t, line, "sekret")
}

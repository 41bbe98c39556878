package main

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/client"
	"github.com/harvestd/harvest/demo"
	"github.com/harvestd/harvest/internal/clusterkey/clusterkeytest"
	"github.com/harvestd/harvest/internal/pgtest"
	"github.com/harvestd/harvest/membership"
	"github.com/harvestd/harvest/node"
)

// Timings of the raft cluster test.
const (
	// raftWindow is the idempotency window: short, so that a drain
	// finishes within seconds.
	raftWindow = 2 * time.Second
	// raftFormTimeout covers three nodes bootstrapping raft and the
	// catalog, and the ring settling, under -race.
	raftFormTimeout = 30 * time.Second
)

// raftBundle is three in-process nodes with a raft shard catalog seeded
// with shards 0 and 1 (BootstrapExpect 3).
type raftBundle struct {
	nodes []*node.Node
}

func setupRaftCluster(t *testing.T) *raftBundle {
	t.Helper()
	reg := harvest.NewRegistry()
	require.NoError(t, demo.New(demo.NewServices()).Register(reg))
	shards := map[uint16]string{0: pgtest.NewDB(t), 1: pgtest.NewDB(t)}
	b := &raftBundle{}
	for i := range 3 {
		var join []string
		if i > 0 {
			join = []string{b.nodes[0].GossipAddr()}
		}
		n, err := node.New(node.Config{
			NodeID: fmt.Sprintf("n%d", i), DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", Shards: shards,
			Gossip:     &membership.Config{BindAddr: "127.0.0.1", Join: join, Profile: membership.ProfileLocal, RejoinInterval: 500 * time.Millisecond},
			ClusterKey: clusterkeytest.Key(),
			// raft's default timings: shrunk ones make leadership flap
			// when -race runs the packages side by side.
			Raft:              &node.RaftConfig{BindAddr: "127.0.0.1:0", BootstrapExpect: 3, DrainCheckInterval: 200 * time.Millisecond},
			IdempotencyWindow: raftWindow, PollInterval: 20 * time.Millisecond, LeaseTTL: 5 * time.Second, Logger: zerolog.Nop(),
		}, reg)
		require.NoError(t, err)
		require.NoError(t, n.Start(context.Background()))
		t.Cleanup(func() { _ = n.Stop(context.Background()) })
		b.nodes = append(b.nodes, n)
	}
	waitFor(t, "every node listing both shards, reachable and served", raftFormTimeout, func() bool {
		for _, n := range b.nodes {
			cat, err := client.New(n.Addr()).Shards(context.Background())
			if err != nil || len(cat.Shards) != 2 {
				return false
			}
			for _, sh := range cat.Shards {
				if !sh.Reachable || sh.Owner == "" {
					return false
				}
			}
		}
		return true
	})
	return b
}

// follower is the CLI's view of a node that is not the raft leader, so
// that every write goes through forwarding.
func (b *raftBundle) follower(t *testing.T) *testBundle {
	t.Helper()
	leader := leaderID(t, b.nodes[0].Addr())
	for _, n := range b.nodes {
		if n.NodeID() != leader {
			return &testBundle{url: n.Addr()}
		}
	}
	t.Fatalf("no follower: %s leads alone", leader)
	return nil
}

// leaderID is the raft leader as the node at addr sees it, once it knows
// one.
func leaderID(t *testing.T, addr string) string {
	t.Helper()
	var leader string
	waitFor(t, "a raft leader", raftFormTimeout, func() bool {
		peers, err := client.New(addr).RaftPeers(context.Background())
		for _, p := range peers {
			if p.Leader {
				leader = p.ID
			}
		}
		return err == nil && leader != ""
	})
	return leader
}

// waitFor polls cond until it holds or within has passed.
func waitFor(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// shardStates maps shard id to state in a "shard list" table.
func shardStates(table string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(table, "\n") {
		cols := regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(line), -1)
		if len(cols) == 8 && cols[0] != "ID" {
			out[cols[0]] = cols[1]
		}
	}
	return out
}

// TestShardCommands drives the shard and cluster peers commands against a
// real three-node raft cluster through a follower. Subtests run in order
// and share the catalog.
func TestShardCommands(t *testing.T) {
	began := time.Now()
	c := setupRaftCluster(t)
	t.Logf("raft cluster formed in %s", time.Since(began).Round(time.Millisecond))
	b := c.follower(t)
	newShard := pgtest.NewDB(t) // dropped when the whole test ends

	t.Run("ListShowsBothWritable", func(t *testing.T) {
		// Under load the follower may be between leaders for a moment.
		var table string
		require.Eventually(t, func() bool {
			r := b.ctl(t, "shard", "list")
			table = r.stdout
			return r.code == 0 && strings.Contains(table, "raft leader n")
		}, 30*time.Second, 100*time.Millisecond, "a raft leader in the list's footer")
		require.Equal(t, [][]string{{"ID", "STATE", "OWNER", "CLAIMS IN WINDOW", "RUNS IN WINDOW", "RUNNING", "WINDOW PASSES", "DATABASE"}},
			rows(table, "ID"), table)
		require.Equal(t, map[string]string{"0": "writable", "1": "writable"}, shardStates(table), table)
		require.Contains(t, table, "idempotency window 2s; raft leader n")
		require.NotContains(t, table, "unreachable")
	})

	t.Run("DrainShowsTheWindowFirst", func(t *testing.T) {
		out := b.ok(t, "shard", "drain", "1")
		require.Contains(t, out, "Shard 1 (writable) before the drain, inside the 2s idempotency window:")
		for _, label := range []string{"Claims in window", "Runs in window", "Running executions", "Window passes"} {
			require.Contains(t, out, label)
		}
		require.True(t, strings.HasPrefix(cell(t, out, "State"), "draining since "), out)
		require.Contains(t, out, "still find their first run there")
		require.NotContains(t, out, "Risk")
	})

	t.Run("LastWritableIsRefused", func(t *testing.T) {
		r := b.ctl(t, "shard", "drain", "0")
		require.Equal(t, exitFailure, r.code, "stdout: %s", r.stdout)
		require.Regexp(t, `^error: unsafe drain: shard 0 is the last writable shard.* \(unsafe_drain, HTTP 409\)\n$`, r.stderr)
		require.Contains(t, r.stdout, "Shard 0 (writable) before the drain", "the window is shown before the refusal")
	})

	t.Run("ForcedDrainPrintsTheRisk", func(t *testing.T) {
		out := b.ok(t, "shard", "drain", "0", "--force")
		require.Equal(t, "true", cell(t, out, "Forced"))
		require.Contains(t, cell(t, out, "Risk"), "shard 0 is the last writable shard")
	})

	t.Run("Undrain", func(t *testing.T) {
		for _, id := range []string{"0", "1"} {
			out := b.ok(t, "shard", "undrain", id)
			require.True(t, strings.HasPrefix(cell(t, out, "State"), "writable since "), out)
		}
		waitFor(t, "both writable on the follower", 10*time.Second, func() bool {
			states := shardStates(b.ok(t, "shard", "list"))
			return states["0"] == "writable" && states["1"] == "writable"
		})
	})

	t.Run("DrainWaitEndsReadOnly", func(t *testing.T) {
		start := time.Now()
		out := b.ok(t, "shard", "drain", "1", "--wait", "--poll", "100ms")
		took := time.Since(start)
		require.GreaterOrEqual(t, took, raftWindow, "read_only only once the window has passed since the drain")
		lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
		last := lines[len(lines)-1]
		require.Regexp(t, `^\[#{24}\] 100%  shard 1 is read_only`, last, out)
		require.Regexp(t, `(?m)^\[[#-]{24}\] +\d+%  shard 1 draining: 0 claims and 0 runs in window, 0 running; `, out,
			"one progress line per poll when not on a terminal")
		require.NotContains(t, out, "\r")
		require.Equal(t, "read_only", b.okJSON(t, "shard", "status", "1")["state"])
		t.Logf("drain --wait took %s with a %s window", took.Round(time.Millisecond), raftWindow)
	})

	t.Run("AddShard", func(t *testing.T) {
		out := b.ok(t, "shard", "add", "2", "--dsn", newShard)
		require.Equal(t, "2", cell(t, out, "Shard"))
		require.True(t, strings.HasPrefix(cell(t, out, "State"), "writable since "), out)
		want := map[string]string{"0": "writable", "1": "read_only", "2": "writable"}
		waitFor(t, "shard 2 writable and reachable on the follower", 10*time.Second, func() bool {
			list := b.ok(t, "shard", "list")
			return maps.Equal(want, shardStates(list)) && !strings.Contains(list, "unreachable")
		})

		r := b.ctl(t, "shard", "add", "2", "--dsn", "postgres://127.0.0.1:1/none")
		require.Equal(t, exitFailure, r.code)
		require.Contains(t, r.stderr, "(conflict, HTTP 409)")
		r = b.ctl(t, "shard", "add", "3", "--dsn", "postgres://127.0.0.1:1/none?connect_timeout=2")
		require.Equal(t, exitFailure, r.code)
		require.Contains(t, r.stderr, "(shard_unreachable, HTTP 422)")
	})

	t.Run("PeersThreeVotersOneLeader", func(t *testing.T) {
		table := b.ok(t, "cluster", "peers")
		require.Equal(t, []string{"ID", "ADDRESS", "VOTER", "LEADER"}, rows(table, "ID")[0])
		voters, leaders := 0, 0
		for _, id := range []string{"n0", "n1", "n2"} {
			r := rows(table, id)
			require.Len(t, r, 1, table)
			require.Regexp(t, `^127\.0\.0\.1:\d+$`, r[0][1])
			if r[0][2] == "true" {
				voters++
			}
			if r[0][3] == "true" {
				leaders++
			}
		}
		require.Equal(t, 3, voters, table)
		require.Equal(t, 1, leaders, table)
		require.Len(t, b.okJSON(t, "cluster", "peers")["peers"], 3)
	})

	t.Run("JSONOutput", func(t *testing.T) {
		cat := b.okJSON(t, "shard", "list")
		require.Equal(t, "2s", cat["idempotency_window"])
		require.Len(t, cat["shards"], 3)
		sh := b.okJSON(t, "shard", "status", "0")
		require.Equal(t, float64(0), sh["shard_id"])
		require.Equal(t, "writable", sh["state"])
		status := sh["status"].(map[string]any)
		require.Equal(t, float64(0), status["claims_in_window"])
		require.NotContains(t, status, "window_passes_at", "nothing inside the window: it has passed")
	})

	t.Run("Errors", func(t *testing.T) {
		r := b.ctl(t, "shard", "status", "9")
		require.Equal(t, exitFailure, r.code)
		require.Contains(t, r.stderr, "(not_found, HTTP 404)")
		r = b.ctl(t, "shard", "drain", "1")
		require.Equal(t, exitFailure, r.code, "a read_only shard cannot be drained")
		require.Contains(t, r.stderr, "(conflict, HTTP 409)")
		for _, args := range [][]string{
			{"shard", "drain", "x"}, {"shard", "status", "65535"}, {"shard", "add", "3"},
			{"shard", "drain", "0", "--poll", "0s"}, {"cluster", "remove-peer"},
		} {
			r := b.ctl(t, args...)
			require.Equal(t, exitUsage, r.code, "%v: %s", args, r.stderr)
		}
	})

	t.Run("RemovePeer", func(t *testing.T) {
		r := b.ctl(t, "cluster", "remove-peer", "nobody")
		require.Equal(t, exitFailure, r.code, "stdout: %s", r.stdout)
		require.True(t, strings.HasPrefix(r.stderr, "error: "), r.stderr)

		// A live follower comes straight back: gossip still sees it.
		leader, victim := leaderID(t, b.url), ""
		for _, n := range c.nodes {
			if n.Addr() != b.url && n.NodeID() != leader {
				victim = n.NodeID()
			}
		}
		out := b.ok(t, "cluster", "remove-peer", victim)
		require.Equal(t, victim, cell(t, out, "Removed peer"))
		waitFor(t, "three voters again", 15*time.Second, func() bool {
			peers, err := client.New(b.url).RaftPeers(context.Background())
			voters := 0
			for _, p := range peers {
				if p.Voter {
					voters++
				}
			}
			return err == nil && voters == 3
		})
	})
}

package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/internal/pgtest"
)

// Deadlines of the cluster test.
const (
	// clusterFormTimeout covers three processes starting (under -race) and
	// gossiping until each sees the others.
	clusterFormTimeout = time.Minute
	// failoverTimeout is the product's promise: a dead owner's shards are
	// served again within 10 s.
	failoverTimeout = 10 * time.Second
)

// TestAgentCluster runs three harvestd agent processes on loopback over
// two shard databases, joined through node 1's gossip address. Static
// shards keep no tokens: the agents run with --auth off. Node 2 runs with
// --node-auth-v1, as in the second round of an upgrade from node
// signatures v1: it signs in both forms, the others in v2 only, and every
// node serves every other's forwards.
func TestAgentCluster(t *testing.T) {
	t.Parallel()
	shards := []uint16{0, 1}
	shardArgs := shardFlags(t, shards...)
	began := time.Now()
	nodes := launchAgents(t, 3, newClusterSecrets(t, false), func(i int) []string { // the same --shard flags
		if i == 1 {
			return append(slices.Clone(shardArgs), "--node-auth-v1")
		}
		return shardArgs
	})
	for _, d := range nodes {
		d.waitReady(t)
	}
	waitServed(t, "three alive nodes serving every shard", clusterFormTimeout, nodes, shards)
	t.Logf("cluster formed %s after launch", time.Since(began).Round(time.Millisecond))

	var id string
	t.Run("KeyedStartReplaysThroughAnotherNode", func(t *testing.T) {
		const body = `{"input": {"user_id": 42}}`
		first := nodes[2].post(t, "/workflows/onboarding/start", body, "Idempotency-Key", "cluster-evt-1").expect(t, http.StatusCreated)
		require.Equal(t, true, first["started_fresh"])
		replay := nodes[0].post(t, "/workflows/onboarding/start", body, "Idempotency-Key", "cluster-evt-1").expect(t, http.StatusOK)
		require.Equal(t, first["execution_id"], replay["execution_id"])
		require.Equal(t, true, replay["deduplicated"])
		id = first["execution_id"].(string)
		result := nodes[1].waitResult(t, id)
		require.Equal(t, "COMPLETED", result["state"], "result: %v", result)
	})

	t.Run("EveryNodeReadsRunsOfEveryShard", func(t *testing.T) {
		// A run on each shard, read through every node: each node that
		// does not own a shard forwards to its owner, signed in its form.
		ids := map[string]string{} // shard (the id's first two bytes) → execution id
		for i := 0; len(ids) < len(shards); i++ {
			require.Less(t, i, 64, "no run landed on every shard")
			r := nodes[0].post(t, "/workflows/onboarding/start", `{"input": {"user_id": 7}}`, "Idempotency-Key", fmt.Sprintf("pair-%d", i)).expect(t, http.StatusCreated)
			exec := r["execution_id"].(string)
			ids[exec[:4]] = exec
		}
		for _, d := range nodes {
			for _, exec := range ids {
				d.get(t, "/workflows/"+exec).expect(t, http.StatusOK)
			}
		}
	})

	survivors := nodes

	t.Run("KilledOwnerIsReplacedWithinTenSeconds", func(t *testing.T) {
		vi := victim(t, nodes)
		served := selfShards(t, nodes[vi])
		killed := time.Now()
		nodes[vi].sigkill(t)
		survivors = slices.Delete(slices.Clone(nodes), vi, vi+1)
		waitServed(t, "the survivors serving every shard", failoverTimeout, survivors, shards)
		t.Logf("n%d (shards %v) killed; survivors serve every shard %s later", vi+1, served, time.Since(killed).Round(time.Millisecond))
		if id != "" {
			for _, d := range survivors {
				d.get(t, "/workflows/"+id).expect(t, http.StatusOK)
			}
		}
	})

	t.Run("SurvivorsStopCleanlyOnSIGTERM", func(t *testing.T) {
		for _, d := range survivors {
			d.stop(t)
		}
	})
}

// shardFlags is a --shard flag for each id, each on a new database.
func shardFlags(t *testing.T, ids ...uint16) []string {
	t.Helper()
	var args []string
	for _, id := range ids {
		args = append(args, "--shard", fmt.Sprintf("%d=%s", id, pgtest.NewDB(t)))
	}
	return args
}

// launchAgents starts n harvestd agent processes on loopback, node i+1
// with the flags extra(i), without waiting for them. Every node gets the
// same --join, node 1's gossip address (node 1 skips itself as a seed),
// and the same secrets, whose token the daemons send.
func launchAgents(t *testing.T, n int, secrets clusterSecrets, extra func(i int) []string) []*daemon {
	t.Helper()
	return launchNodes(t, n, func(int) []string { return []string{"agent"} }, secrets, extra)
}

// launchNodes is launchAgents with the command words of node i+1 from
// command(i): "agent", or none for the short form `harvestd --join …`.
func launchNodes(t *testing.T, n int, command func(i int) []string, secrets clusterSecrets, extra func(i int) []string) []*daemon {
	t.Helper()
	seed := freeAddr(t)
	nodes := make([]*daemon, n)
	for i := range nodes {
		gossip := seed
		if i > 0 {
			gossip = freeAddr(t)
		}
		addr := freeAddr(t)
		args := append(command(i), "--node-id", fmt.Sprintf("n%d", i+1), "--data-dir", t.TempDir(),
			"--http-addr", addr, "--gossip-addr", gossip, "--gossip-profile", "local", "--join", seed)
		args = append(args, secrets.args()...)
		nodes[i] = launch(t, addr, append(args, extra(i)...)...)
		nodes[i].token = secrets.token
	}
	return nodes
}

// TestAgentRaftCluster runs three harvestd agent processes that bootstrap
// the raft shard catalog from their --shard lists (--bootstrap-expect 3),
// and a fourth that joins without --shard and learns the shards from the
// catalog. They run with tokens (the default) and one initial admin token.
// The first three start with the short form `harvestd --join …` (no
// command word), the fourth with `harvestd agent --join …`.
func TestAgentRaftCluster(t *testing.T) {
	t.Parallel()
	shardArgs := shardFlags(t, 0, 1)
	secrets := newClusterSecrets(t, true)
	began := time.Now()
	shortForm := func(i int) []string {
		if i < 3 {
			return nil
		}
		return []string{"agent"}
	}
	nodes := launchNodes(t, 4, shortForm, secrets, func(i int) []string {
		args := []string{"--raft-addr", freeAddr(t), "--drain-check-interval", "1s"}
		if i < 3 {
			args = append(append(args, "--bootstrap-expect", "3"), shardArgs...)
		}
		return args
	})
	for _, d := range nodes {
		d.waitReady(t) // ready needs the catalog's shards
	}
	t.Logf("raft cluster ready %s after launch", time.Since(began).Round(time.Millisecond))

	t.Run("EveryNodeAnswersTheCatalog", func(t *testing.T) {
		for _, d := range nodes {
			body := d.get(t, "/admin/shards").expect(t, http.StatusOK)
			require.Len(t, body["shards"], 2, "%s: %v", d.base, body)
			for _, sh := range body["shards"].([]any) {
				require.Equal(t, "writable", sh.(map[string]any)["state"], "%s: %v", d.base, body)
			}
		}
	})

	// The bootstrap makes voters of the first three members gossip shows
	// alive with a raft address (by node id): n4 nearly always follows as
	// the one non-voter, but on a slow machine n3 can show up after it
	// and follow instead.
	t.Run("FourthNodeFollowsAsNonVoterUnderOneLeader", func(t *testing.T) {
		deadline := time.Now().Add(clusterFormTimeout)
		for {
			peers, err := nodes[0].client().RaftPeers(context.Background())
			require.NoError(t, err)
			voters, leaders, n4 := 0, 0, false
			for _, p := range peers {
				voters += btoi(p.Voter)
				leaders += btoi(p.Leader)
				n4 = n4 || p.ID == "n4"
			}
			if len(peers) == 4 && voters == 3 && leaders == 1 && n4 {
				return
			}
			require.True(t, time.Now().Before(deadline), "raft peers: %+v", peers)
			time.Sleep(pollInterval)
		}
	})

	t.Run("RequestsNeedTheToken", func(t *testing.T) {
		for _, d := range nodes {
			anon := *d
			anon.token = ""
			anon.get(t, "/readyz").expect(t, http.StatusOK)
			anon.get(t, "/workflows").expectError(t, http.StatusUnauthorized, "unauthenticated")
			anon.get(t, "/admin/shards").expectError(t, http.StatusUnauthorized, "unauthenticated")
			wrong := anon
			wrong.token = "hvt_" + randomHex(t, 8) + "_" + randomHex(t, 32)
			wrong.get(t, "/workflows").expectError(t, http.StatusUnauthorized, "unauthenticated")
			d.get(t, "/workflows").expect(t, http.StatusOK)
		}
	})

	// Forwarding to the shard's owner is a node request signed with the
	// cluster key, acting for the verified token.
	t.Run("KeyedStartReplaysThroughAnotherNode", func(t *testing.T) {
		const body = `{"input": {"user_id": 42}}`
		var first map[string]any
		for i, d := range nodes {
			r := d.post(t, "/workflows/onboarding/start", body, "Idempotency-Key", "raft-cluster-evt-1")
			if i == 0 {
				first = r.expect(t, http.StatusCreated)
				continue
			}
			replay := r.expect(t, http.StatusOK)
			require.Equal(t, first["execution_id"], replay["execution_id"], "through n%d", i+1)
			require.Equal(t, true, replay["deduplicated"], "through n%d", i+1)
		}
		result := nodes[3].waitResult(t, first["execution_id"].(string))
		require.Equal(t, "COMPLETED", result["state"], "result: %v", result)
	})

	t.Run("StopCleanlyOnSIGTERM", func(t *testing.T) {
		for i := len(nodes) - 1; i >= 0; i-- {
			nodes[i].stop(t)
		}
	})
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// victim picks a node that serves a shard, preferring one other than the
// seed, node 1.
func victim(t *testing.T, nodes []*daemon) int {
	t.Helper()
	for _, i := range []int{1, 2, 0} {
		if len(selfShards(t, nodes[i])) > 0 {
			return i
		}
	}
	t.Fatal("no node serves a shard")
	return 0
}

// selfShards is what the node reports it serves itself.
func selfShards(t *testing.T, d *daemon) []uint16 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	members, err := d.client().Members(ctx)
	require.NoError(t, err)
	for _, m := range members {
		if m.Self {
			return m.Shards
		}
	}
	t.Fatalf("%s lists no member as itself: %+v", d.base, members)
	return nil
}

// waitServed polls GET /cluster/members of every node until each sees
// exactly len(nodes) alive members and the nodes serve every shard
// between them (by their own report, not the ring's prediction).
func waitServed(t *testing.T, what string, within time.Duration, nodes []*daemon, shards []uint16) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		why := servedYet(nodes, shards)
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v: %s", what, within, why)
		}
		time.Sleep(pollInterval)
	}
}

// servedYet says why the cluster is not there yet; "" when it is.
func servedYet(nodes []*daemon, shards []uint16) string {
	served := map[uint16]bool{}
	for _, d := range nodes {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		members, err := d.client().Members(ctx)
		cancel()
		if err != nil {
			return fmt.Sprintf("%s: %v", d.base, err)
		}
		var alive []string
		for _, m := range members {
			if m.State == "alive" {
				alive = append(alive, m.NodeID)
			}
			if m.Self {
				for _, s := range m.Shards {
					served[s] = true
				}
			}
		}
		if len(alive) != len(nodes) {
			return fmt.Sprintf("%s sees %d alive (%s), want %d", d.base, len(alive), strings.Join(alive, ","), len(nodes))
		}
	}
	for _, s := range shards {
		if !served[s] {
			return fmt.Sprintf("shard %d is not served", s)
		}
	}
	return ""
}

// sigkill kills the process at once: no lease release, no gossip leave.
func (d *daemon) sigkill(t *testing.T) {
	t.Helper()
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGKILL))
	select {
	case <-d.exited:
	case <-time.After(exitTimeout):
		t.Fatalf("harvestd still runs %v after SIGKILL", exitTimeout)
	}
}

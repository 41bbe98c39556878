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

	"github.com/harvestd/harvest/client"
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
// two shard databases, joined through node 1's gossip address.
func TestAgentCluster(t *testing.T) {
	t.Parallel()
	shards := []uint16{0, 1}
	var shardArgs []string
	for _, s := range shards {
		shardArgs = append(shardArgs, "--shard", fmt.Sprintf("%d=%s", s, pgtest.NewDB(t)))
	}
	seed := freeAddr(t) // node 1's gossip address
	nodes := make([]*daemon, 3)
	began := time.Now()
	for i := range nodes {
		gossip := seed
		if i > 0 {
			gossip = freeAddr(t)
		}
		addr := freeAddr(t)
		// Every node gets the same --join and --shard flags; node 1 skips
		// itself as a seed.
		args := append([]string{"agent", "--node-id", fmt.Sprintf("n%d", i+1), "--data-dir", t.TempDir(),
			"--http-addr", addr, "--gossip-addr", gossip, "--gossip-profile", "local", "--join", seed}, shardArgs...)
		nodes[i] = launch(t, addr, args...)
	}
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
	members, err := client.New(d.base).Members(ctx)
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
		members, err := client.New(d.base).Members(ctx)
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

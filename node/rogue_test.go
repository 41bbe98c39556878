package node

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/admin"
	"github.com/harvestd/harvest/engine"
	"github.com/harvestd/harvest/internal/clusterkey"
	"github.com/harvestd/harvest/internal/clusterkey/clusterkeytest"
	"github.com/harvestd/harvest/membership"
	"github.com/harvestd/harvest/ring"
)

// TestRogueMember replays the attack: processes built from package
// membership gossip with a keyed raft cluster. One has no gossip key; the
// other has the gossip key (an operator shared --gossip-key more widely
// than the cluster key) but no member proof. Neither is ever a member:
// no node lists it, raft never adds it, it owns no shard and no request
// is forwarded to it.
func TestRogueMember(t *testing.T) {
	c := newRaftCluster(t, 2, 2, time.Hour)
	rogueAPI := countingServer(t)
	rogueRaft := countingListener(t)
	rogueID := idOwning(t, 0, "n0", "n1", "n2")

	// Without the gossip key: it joins n0, then a witness of its own
	// kind. memberlist joins seeds in order, so once the witness sees it,
	// its attempt on n0 is over.
	witness := startRogue(t, membership.Config{NodeID: "witness"})
	plain := startRogue(t, membership.Config{
		NodeID: "rogue-plain", Join: []string{c.nodes[0].GossipAddr(), witness.Local().GossipAddr},
		Meta: membership.Meta{APIAddr: rogueAPI.addr, RaftAddr: rogueRaft.addr, Version: Version},
	})
	eventually(t, "the witness to see the plain rogue", 20*time.Second, func() bool {
		return slices.Contains(memberIDs(witness.Alive()), "rogue-plain")
	})

	// With the gossip key, without a member proof: the members answer its
	// join, so it knows them and gossips to them; they refuse it.
	keyed := startRogue(t, membership.Config{
		NodeID: rogueID, Join: []string{c.nodes[0].GossipAddr()},
		GossipKey: clusterkeytest.Key().Derive(clusterkey.LabelGossip),
		Meta:      membership.Meta{APIAddr: rogueAPI.addr, RaftAddr: rogueRaft.addr, Version: Version},
	})
	// n1 was never contacted by the rogue's join: what it refuses is the
	// rogue's own gossip.
	eventually(t, "both members to refuse the keyed rogue", 20*time.Second, func() bool {
		return c.nodes[0].gossip.Rejected() > 0 && c.nodes[1].gossip.Rejected() > 0
	})
	require.Contains(t, memberIDs(keyed.Alive()), "n0", "the keyed rogue knows the members")

	// A node joining now is added by the leader's reconcile, which would
	// have added the rogues too (all alive members with a raft address,
	// in one pass): the pass has verifiably run with both rogues around.
	c.nodes = append(c.nodes, c.startRaftNode(t, 2, 0, time.Hour))
	eventually(t, "every node to have n2 as a raft server", 20*time.Second, func() bool {
		for _, n := range c.nodes {
			if !slices.Contains(serverIDs(t, n.admin), "n2") {
				return false
			}
		}
		return true
	})
	for _, n := range c.nodes {
		for _, id := range []string{"rogue-plain", rogueID} {
			require.NotContains(t, memberIDs(n.gossip.Members()), id, "%s lists %s", n.NodeID(), id)
		}
		require.Equal(t, []string{"n0", "n1", "n2"}, serverIDs(t, n.admin), "raft servers seen by %s", n.NodeID())
	}

	c.waitStable() // every shard served by its owner among n0..n2
	// n2 joined last: its catalog loads a moment after the others serve.
	eventually(t, "every node to route shard 0", 20*time.Second, func() bool {
		for _, n := range c.nodes {
			if _, err := n.router.ForShard(0); err != nil {
				return false
			}
		}
		return true
	})
	for _, n := range c.nodes {
		target, err := n.router.ForShard(0)
		require.NoError(t, err)
		if target.Shard == nil { // not served here: forwarded to Owner
			require.Contains(t, []string{"n0", "n1", "n2"}, target.Owner, "owner of shard 0 seen by %s", n.NodeID())
		}
	}
	require.True(t, slices.Contains(c.owner(0).Owned(), 0), "a member serves shard 0")
	for _, n := range c.nodes {
		for _, s := range c.cat.Readable {
			code, _ := get(t, n, fmt.Sprintf("/api/harvest/workflows/%s", engine.NewExecutionID(s)))
			require.Equal(t, http.StatusNotFound, code, "via %s, shard %d", n.NodeID(), s)
		}
	}
	require.Zero(t, rogueAPI.requests.Load(), "requests were forwarded to the rogue")
	require.Zero(t, rogueRaft.accepted.Load(), "raft dialled the rogue")
	require.NotContains(t, memberIDs(plain.Members()), "n0", "the plain rogue learnt the members")
}

// idOwningNone returns a node id that owns none of shards among members
// plus itself.
func idOwningNone(t *testing.T, shards []uint16, members ...string) string {
	t.Helper()
	for i := range 10000 {
		id := fmt.Sprintf("visitor-%d", i)
		owns := false
		for _, s := range shards {
			owner, _ := ring.OwnerOf(s, append(slices.Clone(members), id))
			owns = owns || owner == id
		}
		if !owns {
			return id
		}
	}
	require.FailNow(t, "every id owns a shard")
	return ""
}

// startRogue starts a membership on loopback with a free port, local
// timings and no cluster key, stopped at cleanup.
func startRogue(t *testing.T, cfg membership.Config) *membership.Membership {
	t.Helper()
	cfg.BindAddr, cfg.Profile, cfg.RejoinInterval = "127.0.0.1", membership.ProfileLocal, 500*time.Millisecond
	m, err := membership.New(cfg)
	require.NoError(t, err)
	require.NoError(t, m.Start(context.Background()))
	t.Cleanup(m.Stop)
	return m
}

// idOwning returns a node id that rendezvous hashing gives shard among
// members plus itself, and among members but the last plus itself.
func idOwning(t *testing.T, shard uint16, members ...string) string {
	t.Helper()
	for i := range 10000 {
		id := fmt.Sprintf("rogue-%d", i)
		all, _ := ring.OwnerOf(shard, append(slices.Clone(members), id))
		fewer, _ := ring.OwnerOf(shard, append(slices.Clone(members[:len(members)-1]), id))
		if all == id && fewer == id {
			return id
		}
	}
	require.FailNow(t, "no id owns the shard")
	return ""
}

type counted struct {
	addr     string
	requests atomic.Int64
	accepted atomic.Int64
}

// countingServer is an HTTP server that counts the requests it gets.
func countingServer(t *testing.T) *counted {
	t.Helper()
	c := &counted{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		c.requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTeapot)
		_, _ = w.Write([]byte("{}"))
	}))
	t.Cleanup(srv.Close)
	c.addr = srv.Listener.Addr().String()
	return c
}

// countingListener is a TCP listener that counts and closes the
// connections it accepts.
func countingListener(t *testing.T) *counted {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	c := &counted{addr: ln.Addr().String()}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			c.accepted.Add(1)
			_ = conn.Close()
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); <-done })
	return c
}

func memberIDs(ms []membership.Member) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.NodeID
	}
	return out
}

// serverIDs lists the servers of a's raft configuration.
func serverIDs(t *testing.T, a *admin.Admin) []string {
	t.Helper()
	servers, err := a.Servers()
	require.NoError(t, err)
	out := make([]string, len(servers))
	for i, s := range servers {
		out[i] = s.ID
	}
	return out
}

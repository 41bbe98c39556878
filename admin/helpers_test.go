package admin

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/internal/clusterkey/clusterkeytest"
	"github.com/harvestd/harvest/membership"
)

// Deadlines of the poll-with-deadline waits. With testRaftConfig an
// election takes well under a second; the rest is slack for -race on 2
// cores with several clusters running in parallel.
const (
	clusterDeadline = 15 * time.Second
	pollTick        = 20 * time.Millisecond
	opTimeout       = 5 * time.Second
)

// testShards is the static shard configuration of the test clusters.
var testShards = map[uint16]string{0: "postgres://db/shard0", 1: "postgres://db/shard1"}

// testRaftConfig shrinks raft's timers (DefaultConfig: 1 s) and keeps no
// trailing logs after a snapshot, so that a lagging follower must install
// the snapshot. Automatic snapshots are off; tests force them.
func testRaftConfig() *raft.Config {
	c := raft.DefaultConfig()
	c.HeartbeatTimeout = 500 * time.Millisecond
	c.ElectionTimeout = 500 * time.Millisecond
	c.LeaderLeaseTimeout = 250 * time.Millisecond
	c.CommitTimeout = 5 * time.Millisecond
	c.TrailingLogs = 0
	c.SnapshotThreshold = 1 << 30
	c.SnapshotInterval = time.Hour
	return c
}

// fakeGossip is the membership all nodes of a test cluster share: the
// test sets member states; every node's view gets nudged.
type fakeGossip struct {
	mu      sync.Mutex
	members map[string]membership.Member
	views   []*fakePeers
}

// fakePeers is one node's view of fakeGossip, with its own nudge channel.
type fakePeers struct {
	g       *fakeGossip
	changed chan struct{}
}

var _ Peers = (*fakePeers)(nil)

func newFakeGossip() *fakeGossip { return &fakeGossip{members: map[string]membership.Member{}} }

func (g *fakeGossip) view() *fakePeers {
	g.mu.Lock()
	defer g.mu.Unlock()
	p := &fakePeers{g: g, changed: make(chan struct{}, 1)}
	g.views = append(g.views, p)
	return p
}

// set records a member and nudges every view.
func (g *fakeGossip) set(m membership.Member) {
	g.mu.Lock()
	g.members[m.NodeID] = m
	views := slices.Clone(g.views)
	g.mu.Unlock()
	for _, v := range views {
		select {
		case v.changed <- struct{}{}:
		default:
		}
	}
}

// setState changes a known member's state.
func (g *fakeGossip) setState(id string, state membership.State) {
	g.mu.Lock()
	m := g.members[id]
	g.mu.Unlock()
	m.State = state
	g.set(m)
}

func (g *fakeGossip) list(keep func(membership.Member) bool) []membership.Member {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []membership.Member
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		if m := g.members[id]; keep(m) {
			out = append(out, m)
		}
	}
	return out
}

func (p *fakePeers) Alive() []membership.Member {
	return p.g.list(func(m membership.Member) bool { return m.State == membership.StateAlive })
}

func (p *fakePeers) Members() []membership.Member {
	return p.g.list(func(membership.Member) bool { return true })
}

func (p *fakePeers) Changed() <-chan struct{} { return p.changed }

// testCluster is a set of Admins over loopback TCP sharing a fakeGossip.
type testCluster struct {
	t         *testing.T
	gossip    *fakeGossip
	logger    zerolog.Logger
	maxVoters int
	dirs      map[string]string // data dir by node id, kept across restarts
	addrs     map[string]string // raft address by node id, reused on restart
	nodes     map[string]*Admin // running nodes
}

// setup returns an empty test cluster whose nodes keep MaxVoters voters.
// Logs are printed only when the test fails.
func setup(t *testing.T, maxVoters int) *testCluster {
	t.Helper()
	return &testCluster{
		t:         t,
		gossip:    newFakeGossip(),
		logger:    testLogger(t),
		maxVoters: maxVoters,
		dirs:      map[string]string{},
		addrs:     map[string]string{},
		nodes:     map[string]*Admin{},
	}
}

// start starts node id with the given BootstrapExpect, announces it alive
// in gossip and stops it at cleanup. A restarted node gets its old data
// dir and raft address.
func (c *testCluster) start(t *testing.T, id string, expect int) *Admin {
	t.Helper()
	if _, ok := c.dirs[id]; !ok {
		c.dirs[id] = c.t.TempDir()
		c.addrs[id] = "127.0.0.1:0"
	}
	a, err := New(Config{
		NodeID:            id,
		DataDir:           c.dirs[id],
		BindAddr:          c.addrs[id],
		BootstrapExpect:   expect,
		MaxVoters:         c.maxVoters,
		InitialShards:     testShards,
		ReconcileInterval: 100 * time.Millisecond,
		Raft:              testRaftConfig(),
		ClusterKey:        clusterkeytest.Key(),
		Logger:            c.logger.With().Str("node_id", id).Logger(),
	}, c.gossip.view())
	require.NoError(t, err)
	require.NoError(t, a.Start(context.Background()))
	c.t.Cleanup(a.Stop)
	c.addrs[id] = a.Addr()
	c.nodes[id] = a
	c.gossip.set(membership.Member{
		Meta:  membership.Meta{NodeID: id, APIAddr: apiAddr(id), RaftAddr: a.Addr(), Version: "test"},
		State: membership.StateAlive,
	})
	return a
}

func apiAddr(id string) string { return id + ".api.test:8080" }

// bootstrap starts n voters "n1".."nn" with BootstrapExpect n and waits
// until each knows a leader and has the catalog.
func (c *testCluster) bootstrap(t *testing.T, n int) {
	t.Helper()
	for i := 1; i <= n; i++ {
		c.start(t, fmt.Sprintf("n%d", i), n)
	}
	c.waitReady(t)
}

// waitReady waits until every running node knows a leader and has a
// catalog.
func (c *testCluster) waitReady(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clusterDeadline)
	defer cancel()
	for id, a := range c.nodes {
		require.NoError(t, a.WaitReady(ctx), "node %s ready", id)
	}
}

// stop stops node id gracefully (crash: without leadership transfer) and
// marks it in gossip.
func (c *testCluster) stop(t *testing.T, id string, crash bool, state membership.State) {
	t.Helper()
	c.nodes[id].stop(!crash)
	delete(c.nodes, id)
	c.gossip.setState(id, state)
}

// leader waits until every running node agrees on one leader and returns
// it.
func (c *testCluster) leader(t *testing.T) (string, *Admin) {
	t.Helper()
	var id string
	require.EventuallyWithT(t, func(t *assert.CollectT) {
		id = ""
		for nid, a := range c.nodes {
			lid, api := a.Leader()
			require.NotEmpty(t, lid, "%s knows no leader", nid)
			require.Contains(t, c.nodes, lid, "%s follows a stopped leader", nid)
			require.Equal(t, apiAddr(lid), api)
			if id == "" {
				id = lid
			}
			require.Equal(t, id, lid, "%s follows another leader", nid)
		}
	}, clusterDeadline, pollTick)
	return id, c.nodes[id]
}

// follower returns a running node that is not the leader.
func (c *testCluster) follower(t *testing.T) (string, *Admin) {
	t.Helper()
	lid, _ := c.leader(t)
	for _, id := range slices.Sorted(maps.Keys(c.nodes)) {
		if id != lid {
			return id, c.nodes[id]
		}
	}
	require.FailNow(t, "no follower")
	return "", nil
}

// apply applies cmd on the leader, retrying while leadership moves: a
// NotLeaderError means nothing was proposed; after a lost leadership the
// outcome is unknown, so a retry that finds the command already applied
// (ErrShardExists, ErrInvalidTransition) counts as done, as it would for
// a real client. Any other error fails.
func (c *testCluster) apply(t *testing.T, cmd Command) {
	t.Helper()
	deadline := time.Now().Add(clusterDeadline)
	unknown := false
	for {
		_, a := c.leader(t)
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		err := a.Apply(ctx, cmd)
		cancel()
		switch {
		case err == nil:
			return
		case unknown && (errors.Is(err, ErrShardExists) || errors.Is(err, ErrInvalidTransition)):
			return
		case errors.Is(err, raft.ErrLeadershipLost):
			unknown = true
		case !errors.Is(err, ErrNotLeader):
			require.NoError(t, err, "apply %s", cmd.Type())
		}
		require.True(t, time.Now().Before(deadline), "apply %s: %v", cmd.Type(), err)
		<-time.After(pollTick)
	}
}

// removePeer removes peer id ("" for the leader itself) through the
// current leader, retrying while leadership moves, as apply does. It
// returns the first definite answer (nil once removed, ErrUnknownPeer,
// ErrRemoveLeader) and whether a lost leadership made it propose again;
// after a lost leadership a retry that finds the peer gone counts as
// removed.
func (c *testCluster) removePeer(t *testing.T, id string) (retried bool, err error) {
	t.Helper()
	deadline := time.Now().Add(clusterDeadline)
	for {
		lid, a := c.leader(t)
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		err = a.RemovePeer(ctx, cmp.Or(id, lid))
		cancel()
		switch {
		case retried && errors.Is(err, ErrUnknownPeer):
			return true, nil
		case errors.Is(err, ErrOutcomeUnknown):
			retried = true
		case !errors.Is(err, ErrNotLeader):
			return retried, err
		}
		require.True(t, time.Now().Before(deadline), "remove peer %s: %v", id, err)
		<-time.After(pollTick)
	}
}

// waitCatalog waits until every running node's catalog equals the
// leader's (same applied index and content).
func (c *testCluster) waitCatalog(t *testing.T) Catalog {
	t.Helper()
	_, leader := c.leader(t)
	var want Catalog
	require.EventuallyWithT(t, func(t *assert.CollectT) {
		want = leader.Catalog()
		for id, a := range c.nodes {
			require.Equal(t, want, a.Catalog(), "catalog of %s", id)
		}
	}, clusterDeadline, pollTick)
	return want
}

// waitServers waits until the leader's raft configuration has exactly
// the given voters and non-voters.
func (c *testCluster) waitServers(t *testing.T, voters, nonvoters []string) {
	t.Helper()
	_, a := c.leader(t)
	require.EventuallyWithT(t, func(t *assert.CollectT) {
		servers, err := a.Servers()
		require.NoError(t, err)
		var gotVoters, gotNonvoters []string
		for _, s := range servers {
			if s.Voter {
				gotVoters = append(gotVoters, s.ID)
			} else {
				gotNonvoters = append(gotNonvoters, s.ID)
			}
		}
		require.Equal(t, voters, gotVoters, "voters")
		require.Equal(t, nonvoters, gotNonvoters, "non-voters")
	}, clusterDeadline, pollTick)
}

func shardIDs(c Catalog) []uint16 {
	return slices.SortedFunc(maps.Keys(c.Shards), cmp.Compare)
}

// testLogger returns a debug logger whose output is printed only when the
// test fails.
func testLogger(t *testing.T) zerolog.Logger {
	w := &lockedBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log:\n%s", w.String())
		}
	})
	return zerolog.New(w).With().Timestamp().Logger().Level(zerolog.DebugLevel)
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

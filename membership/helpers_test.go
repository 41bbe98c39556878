package membership

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/internal/clusterkey/clusterkeytest"
)

// Deadlines of the poll-with-deadline waits. Failure detection with
// tuneFast takes about 1-3 s; the rest is slack for -race on 2 cores.
const (
	convergeDeadline = 10 * time.Second
	failureDeadline  = 15 * time.Second
	pollTick         = 20 * time.Millisecond
)

// tuneFast shortens memberlist's timers below ProfileLocal and isolates
// the test's cluster with a label: parallel tests reuse freed ports, and
// without a label a node re-joining a dead peer's address could merge two
// tests' clusters.
func tuneFast(label string) func(*memberlist.Config) {
	return func(mc *memberlist.Config) {
		mc.ProbeInterval = 300 * time.Millisecond
		mc.ProbeTimeout = 200 * time.Millisecond
		mc.SuspicionMult = 3
		mc.GossipInterval = 50 * time.Millisecond
		mc.PushPullInterval = 2 * time.Second
		mc.GossipToTheDeadTime = 5 * time.Second
		mc.Label = label
	}
}

// testBundle is what a test shares between its nodes.
type testBundle struct {
	label  string
	logger zerolog.Logger
}

// setup returns the bundle of one test: a cluster label and a logger
// whose output is printed only when the test fails.
func setup(t *testing.T) *testBundle {
	t.Helper()
	return &testBundle{label: fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano()), logger: testLogger(t)}
}

// config returns a test Config for node id on 127.0.0.1 with a free port,
// ProfileLocal, tuneFast, the test cluster key and seeds at the given
// members' gossip addresses.
func (b *testBundle) config(id string, seeds ...*Membership) Config {
	cfg := Config{
		NodeID:         id,
		BindAddr:       "127.0.0.1",
		Profile:        ProfileLocal,
		RejoinInterval: 200 * time.Millisecond,
		LeaveTimeout:   time.Second,
		Meta:           Meta{APIAddr: "api." + id + ":7233", RaftAddr: "raft." + id + ":7234", Version: "test"},
		ClusterKey:     clusterkeytest.Key(),
		Logger:         b.logger.With().Str("node_id", id).Logger(),
		tune:           tuneFast(b.label),
	}
	for _, s := range seeds {
		cfg.Join = append(cfg.Join, s.Local().GossipAddr)
	}
	return cfg
}

// start creates and starts a node and stops it at cleanup.
func start(t *testing.T, cfg Config) *Membership {
	t.Helper()
	m, err := New(cfg)
	require.NoError(t, err)
	require.NoError(t, m.Start(context.Background()))
	t.Cleanup(m.Stop)
	return m
}

// cluster starts n nodes "<prefix>-1".."<prefix>-n"; node i joins via node
// i-1 only, so membership of the others must spread by gossip. It waits
// until every node sees all n alive.
func (b *testBundle) cluster(t *testing.T, n int, mod func(*Config)) []*Membership {
	t.Helper()
	nodes := make([]*Membership, 0, n)
	for i := range n {
		var seeds []*Membership
		if i > 0 {
			seeds = nodes[i-1 : i]
		}
		cfg := b.config(fmt.Sprintf("node-%d", i+1), seeds...)
		if mod != nil {
			mod(&cfg)
		}
		nodes = append(nodes, start(t, cfg))
	}
	waitAlive(t, convergeDeadline, nodes, ids(nodes)...)
	return nodes
}

// waitAlive waits until each observer's Alive members are exactly want.
func waitAlive(t *testing.T, d time.Duration, observers []*Membership, want ...string) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		for _, o := range observers {
			require.Equal(c, want, memberIDs(o.Alive()), "alive members seen by %s", o.Local().NodeID)
		}
	}, d, pollTick)
}

// waitState waits until every observer sees member id in state.
func waitState(t *testing.T, d time.Duration, observers []*Membership, id string, state State) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		for _, o := range observers {
			mb, ok := find(o.Members(), id)
			require.True(c, ok, "%s does not know %s", o.Local().NodeID, id)
			require.Equal(c, state, mb.State, "state of %s seen by %s", id, o.Local().NodeID)
		}
	}, d, pollTick)
}

// waitChanged waits for a nudge on ch.
func waitChanged(t *testing.T, d time.Duration, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(d):
		require.FailNow(t, "Changed did not fire", "within %s", d)
	}
}

// drain empties a Changed channel.
func drain(ch <-chan struct{}) {
	select {
	case <-ch:
	default:
	}
}

// crash stops m without leaving, as a killed process would.
func crash(m *Membership) { m.stop(false) }

func gossipPort(t *testing.T, m *Membership) int {
	t.Helper()
	_, p, err := net.SplitHostPort(m.Local().GossipAddr)
	require.NoError(t, err)
	port, err := strconv.Atoi(p)
	require.NoError(t, err)
	return port
}

func ids(nodes []*Membership) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.Local().NodeID
	}
	return out
}

func memberIDs(ms []Member) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.NodeID
	}
	return out
}

func find(ms []Member, id string) (Member, bool) {
	for _, m := range ms {
		if m.NodeID == id {
			return m, true
		}
	}
	return Member{}, false
}

// testLogger returns a debug logger whose output is printed when the test
// fails. Writes after the test ended (memberlist goroutines winding down)
// are kept in the buffer and dropped.
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

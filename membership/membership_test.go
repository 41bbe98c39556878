package membership

import (
	"context"
	"crypto/rand"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMembership(t *testing.T) {
	t.Parallel()

	t.Run("ThreeNodesJoinViaSeeds", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		nodes := b.cluster(t, 3, nil)

		for _, o := range nodes {
			members := o.Members()
			require.Equal(t, []string{"node-1", "node-2", "node-3"}, memberIDs(members))
			for i, mb := range members {
				want := nodes[i].Local()
				require.Equal(t, want.Meta, mb.Meta, "meta of %s seen by %s", mb.NodeID, o.Local().NodeID)
				require.Equal(t, want.GossipAddr, mb.GossipAddr)
				require.Equal(t, StateAlive, mb.State)
			}
		}
		local := nodes[1].Local()
		require.Equal(t, Meta{NodeID: "node-2", APIAddr: "api.node-2:7233", RaftAddr: "raft.node-2:7234", Version: "test"}, local.Meta)
		require.Equal(t, StateAlive, local.State)
		require.Contains(t, local.GossipAddr, "127.0.0.1:")
	})

	t.Run("GracefulStopIsLeft", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		nodes := b.cluster(t, 3, nil)
		drain(nodes[0].Changed())

		stopped := time.Now()
		nodes[2].Stop()
		t.Logf("stop took %s", time.Since(stopped))
		nodes[2].Stop() // idempotent

		waitChanged(t, convergeDeadline, nodes[0].Changed())
		waitState(t, convergeDeadline, nodes[:2], "node-3", StateLeft)
		t.Logf("left seen after %s", time.Since(stopped))
		waitAlive(t, convergeDeadline, nodes[:2], "node-1", "node-2")
		require.Equal(t, StateLeft, nodes[2].Local().State)
	})

	t.Run("ALeaveSeenAsAFailureIsCorrected", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		nodes := b.cluster(t, 3, nil)
		nodes[2].Stop()
		// One survivor sees the leave (on a busy machine the other may
		// already have declared node-3 dead: the very case below).
		var saw, missed *Membership
		require.Eventually(t, func() bool {
			for i, o := range nodes[:2] {
				if mb, ok := find(o.Members(), "node-3"); ok && mb.State == StateLeft {
					saw, missed = o, nodes[1-i]
					return true
				}
			}
			return false
		}, convergeDeadline, pollTick, "a survivor to see node-3 leave")
		// The other missed the leaving announcement, which the leave
		// itself can overtake: it has node-3 dead.
		gone, ok := missed.table.get("node-3")
		require.True(t, ok)
		gone.State = StateDead
		missed.table.set(gone, time.Now())
		// A push/pull with the one that saw node-3 leave corrects it.
		_, err := missed.list.Join([]string{saw.Local().GossipAddr})
		require.NoError(t, err)
		waitState(t, convergeDeadline, []*Membership{missed}, "node-3", StateLeft)
	})

	t.Run("CrashIsDeadAndRestartIsRejoined", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		nodes := b.cluster(t, 3, nil)
		port := gossipPort(t, nodes[2])

		crashed := time.Now()
		crash(nodes[2])
		waitState(t, failureDeadline, nodes[:2], "node-3", StateDead)
		t.Logf("dead seen after %s", time.Since(crashed))

		// Same id and address, no seeds: only the survivors' re-join
		// brings it back. New metadata shows the peers take the new
		// incarnation's.
		cfg := b.config("node-3")
		cfg.BindPort = port
		cfg.Meta.APIAddr = "api.node-3-restarted:7233"
		restarted := time.Now()
		back := start(t, cfg)
		nodes[2] = back

		waitAlive(t, convergeDeadline, nodes, "node-1", "node-2", "node-3")
		t.Logf("alive again after %s", time.Since(restarted))
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			mb, ok := find(nodes[0].Members(), "node-3")
			require.True(c, ok)
			require.Equal(c, "api.node-3-restarted:7233", mb.APIAddr)
		}, convergeDeadline, pollTick)
	})

	t.Run("GossipKey", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		key := randomKey(t, 32)
		nodes := b.cluster(t, 2, func(cfg *Config) { cfg.GossipKey = key })

		for name, otherKey := range map[string][]byte{"WrongKey": randomKey(t, 32), "NoKey": nil} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				var failures atomic.Int32
				cfg := b.config("intruder-"+name, nodes[0])
				cfg.GossipKey = otherKey
				cfg.joinAttempted = func(n int, err error) {
					if n == 0 && err != nil {
						failures.Add(1)
					}
				}
				intruder := start(t, cfg)

				require.Eventually(t, func() bool { return failures.Load() >= 3 }, convergeDeadline, pollTick,
					"join attempts did not fail")
				require.Equal(t, []string{cfg.NodeID}, memberIDs(intruder.Alive()))
				for _, n := range nodes {
					_, ok := find(n.Members(), cfg.NodeID)
					require.False(t, ok, "%s knows the intruder", n.Local().NodeID)
				}
			})
		}
	})

	t.Run("UpdateMeta", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		nodes := b.cluster(t, 2, nil)
		drain(nodes[1].Changed())

		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, nodes[0].UpdateMeta(ctx, Meta{APIAddr: "api.new:1", RaftAddr: "raft.new:2", Version: "v2"}))
		want := Meta{NodeID: "node-1", APIAddr: "api.new:1", RaftAddr: "raft.new:2", Version: "v2"}
		require.Equal(t, want, nodes[0].Local().Meta)

		waitChanged(t, convergeDeadline, nodes[1].Changed())
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			mb, ok := find(nodes[1].Members(), "node-1")
			require.True(c, ok)
			require.Equal(c, want, mb.Meta)
		}, convergeDeadline, pollTick)

		err := nodes[0].UpdateMeta(ctx, Meta{NodeID: "someone-else"})
		require.ErrorContains(t, err, "differs from node id")
		err = nodes[0].UpdateMeta(ctx, Meta{APIAddr: string(make([]byte, MetaMaxSize))})
		require.ErrorIs(t, err, ErrMetaTooLarge)
	})

	t.Run("StartDoesNotWaitForSeeds", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		stall, accepted := stallingListener(t)
		cfg := b.config("lonely")
		cfg.Join = []string{closedPort(t), stall}
		tune := cfg.tune
		cfg.tune = func(mc *memberlist.Config) {
			tune(mc)
			mc.TCPTimeout = time.Minute // the stalled push/pull would block this long
		}
		joinErr := make(chan error, 1)
		cfg.joinAttempted = func(_ int, err error) { joinErr <- err }

		m, err := New(cfg)
		require.NoError(t, err)
		began := time.Now()
		require.NoError(t, m.Start(context.Background()))
		require.Less(t, time.Since(began), 30*time.Second, "Start waited for seeds (a minute)")
		require.Equal(t, []string{"lonely"}, memberIDs(m.Alive()))

		waitChanged(t, convergeDeadline, accepted) // the join's push/pull is in flight
		began = time.Now()
		m.Stop()
		require.Less(t, time.Since(began), 30*time.Second, "Stop waited for the in-flight join (a minute)")
		require.Error(t, <-joinErr, "the aborted join reports an error")
	})

	t.Run("Lifecycle", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		m, err := New(b.config("solo"))
		require.NoError(t, err)
		ctx := context.Background()

		require.Equal(t, Member{Meta: Meta{NodeID: "solo", APIAddr: "api.solo:7233", RaftAddr: "raft.solo:7234", Version: "test"}}, m.Local())
		require.ErrorIs(t, m.UpdateMeta(ctx, Meta{}), ErrNotStarted)
		require.NoError(t, m.Start(ctx))
		require.ErrorIs(t, m.Start(ctx), ErrAlreadyStarted)
		require.NoError(t, m.UpdateMeta(ctx, Meta{Version: "v2"})) // no peers: returns at once
		m.Stop()
		m.Stop()
		require.ErrorIs(t, m.Start(ctx), ErrStopped)
		require.ErrorIs(t, m.UpdateMeta(ctx, Meta{}), ErrStopped)

		never, err := New(b.config("never-started"))
		require.NoError(t, err)
		never.Stop()
		require.ErrorIs(t, never.Start(ctx), ErrStopped)
	})
}

func randomKey(t *testing.T, n int) []byte {
	t.Helper()
	key := make([]byte, n)
	_, err := rand.Read(key)
	require.NoError(t, err)
	return key
}

// stallingListener returns the address of a TCP listener that accepts
// connections and never answers, like a paused process, and a channel
// nudged on each accepted connection.
func stallingListener(t *testing.T) (string, <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	accepted := make(chan struct{}, 1)
	done := make(chan struct{})
	var conns []net.Conn
	go func() {
		defer close(done)
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, conn)
			select {
			case accepted <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String(), accepted
}

// closedPort returns a 127.0.0.1 address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

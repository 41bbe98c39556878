package admin

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/internal/clusterkey/clusterkeytest"
	"github.com/harvestd/harvest/membership"
)

// The cluster tests run real raft over loopback TCP with fake gossip.

func TestClusterBootstrapAndFailover(t *testing.T) {
	t.Parallel()
	c := setup(t, 3)
	c.bootstrap(t, 3)

	t.Run("CatalogHasInitialShards", func(t *testing.T) {
		cat := c.waitCatalog(t)
		require.Equal(t, []uint16{0, 1}, shardIDs(cat))
		require.Equal(t, testShards[1], cat.Shards[1].DSN)
		require.Equal(t, StateWritable, cat.Shards[1].State)
		require.Equal(t, []uint64{1}, epochNumbers(cat))
		require.Equal(t, IdempotencyWindowDefault, cat.Settings.IdempotencyWindow)
		c.waitServers(t, []string{"n1", "n2", "n3"}, nil)
	})

	t.Run("FollowerApplyNamesLeader", func(t *testing.T) {
		lid, _ := c.leader(t)
		_, f := c.follower(t)
		err := f.Apply(context.Background(), AddShard{ID: 2, DSN: "x"})
		var nle *NotLeaderError
		require.ErrorAs(t, err, &nle)
		require.ErrorIs(t, err, ErrNotLeader)
		require.Equal(t, &NotLeaderError{LeaderID: lid, LeaderAPIAddr: apiAddr(lid)}, nle)

		err = f.RemovePeer(context.Background(), lid)
		require.ErrorIs(t, err, ErrNotLeader)
	})

	t.Run("LeaderApplyAndRejection", func(t *testing.T) {
		_, l := c.leader(t)
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		require.NoError(t, l.Apply(ctx, AddShard{ID: 2, DSN: "postgres://db/shard2"}))
		require.ErrorIs(t, l.Apply(ctx, AddShard{ID: 2, DSN: "again"}), ErrShardExists)
		require.ErrorIs(t, l.Apply(ctx, SetShardState{ID: 9, State: StateWritable}), ErrUnknownShard)
		require.ErrorIs(t, l.Apply(ctx, SetShardState{ID: 2, State: StateReadOnly}), ErrInvalidTransition)
		index := l.Catalog().Index
		require.ErrorIs(t, l.Apply(ctx, AddShard{ID: 3}), ErrInvalidCommand)
		require.Equal(t, index, l.Catalog().Index, "invalid fields are rejected before proposing")

		cat := c.waitCatalog(t)
		require.Equal(t, StateReadable, cat.Shards[2].State)
		require.Equal(t, []uint64{1, 2}, epochNumbers(cat))
	})

	t.Run("LeaderKilledNewLeaderTakesOver", func(t *testing.T) {
		oldID, old := c.leader(t)
		before := old.Catalog()
		started := time.Now()
		c.stop(t, oldID, true, membership.StateDead)

		newID, _ := c.leader(t)
		t.Logf("new leader %s after %s", newID, time.Since(started))
		require.NotEqual(t, oldID, newID)
		require.Equal(t, before, c.waitCatalog(t), "catalog survives the failover")

		c.apply(t, SetShardState{ID: 2, State: StateWritable})
		cat := c.waitCatalog(t)
		require.Equal(t, StateWritable, cat.Shards[2].State)
		require.Equal(t, []uint16{0, 1, 2}, cat.Current().Writable)
		c.waitServers(t, []string{"n1", "n2", "n3"}, nil) // the dead voter stays
	})
}

func TestClusterFollowerCatchesUp(t *testing.T) {
	t.Parallel()
	c := setup(t, 3)
	c.bootstrap(t, 3)

	t.Run("FromLog", func(t *testing.T) {
		fid, _ := c.follower(t)
		c.stop(t, fid, false, membership.StateDead)
		c.apply(t, AddShard{ID: 10, DSN: "d10"})
		c.apply(t, SetShardState{ID: 10, State: StateWritable})

		c.start(t, fid, 3)
		cat := c.waitCatalog(t)
		require.Equal(t, StateWritable, cat.Shards[10].State)
	})

	t.Run("FromSnapshot", func(t *testing.T) {
		fid, _ := c.follower(t)
		c.stop(t, fid, false, membership.StateDead)
		c.apply(t, AddShard{ID: 11, DSN: "d11"})
		_, l := c.leader(t)
		require.NoError(t, l.node.Load().raft.Snapshot().Error())
		c.apply(t, AddShard{ID: 12, DSN: "d12", Writable: true})

		f := c.start(t, fid, 3)
		cat := c.waitCatalog(t)
		require.Equal(t, []uint16{0, 1, 10, 11, 12}, shardIDs(cat))
		stats := f.node.Load().raft.Stats()
		require.NotEqual(t, "0", stats["last_snapshot_index"], "the follower installed the leader's snapshot")
	})

	t.Run("RestartedOnNewAddress", func(t *testing.T) {
		fid, _ := c.follower(t)
		c.stop(t, fid, false, membership.StateDead)
		c.addrs[fid] = "127.0.0.1:0"
		f := c.start(t, fid, 3)
		c.apply(t, AddShard{ID: 13, DSN: "d13"})
		c.waitCatalog(t)
		_, l := c.leader(t)
		servers, err := l.Servers()
		require.NoError(t, err)
		require.Contains(t, servers, Server{ID: fid, Addr: f.Addr(), Voter: true}, "the leader follows the gossiped raft address")
	})
}

func TestClusterJoinAsNonVoters(t *testing.T) {
	t.Parallel()
	c := setup(t, 3)
	c.bootstrap(t, 3)
	c.start(t, "n4", 0)
	c.start(t, "n5", 0)

	t.Run("BeyondMaxVotersJoinAsNonVoters", func(t *testing.T) {
		c.waitServers(t, []string{"n1", "n2", "n3"}, []string{"n4", "n5"})
		c.waitReady(t)
		require.Equal(t, []uint16{0, 1}, shardIDs(c.waitCatalog(t)))
	})

	t.Run("RemovePeerOfDeadVoterPromotes", func(t *testing.T) {
		lid, l := c.leader(t)
		dead := "n1"
		if lid == dead {
			dead = "n2"
		}
		c.stop(t, dead, true, membership.StateDead)
		c.waitServers(t, []string{"n1", "n2", "n3"}, []string{"n4", "n5"}) // dead voters stay

		_, err := c.removePeer(t, "nobody")
		require.ErrorIs(t, err, ErrUnknownPeer)
		_, err = c.removePeer(t, "")
		require.ErrorIs(t, err, ErrRemoveLeader)
		retried, err := c.removePeer(t, dead)
		require.NoError(t, err)

		_, l = c.leader(t)
		count := func(t require.TestingT) {
			servers, err := l.Servers()
			require.NoError(t, err)
			var voters, nonvoters int
			for _, s := range servers {
				require.NotEqual(t, dead, s.ID)
				if s.Voter {
					voters++
				} else {
					nonvoters++
				}
			}
			require.Equal(t, 3, voters, "a non-voter was promoted before RemovePeer returned: %+v", servers)
			require.Equal(t, 1, nonvoters)
		}
		if retried {
			// Leadership moved during the removal: the new leader's
			// reconcile promotes a non-voter, soon rather than before.
			require.EventuallyWithT(t, func(t *assert.CollectT) { count(t) }, clusterDeadline, pollTick)
		} else {
			count(t)
		}
		c.apply(t, AddShard{ID: 20, DSN: "d20"})
		c.waitCatalog(t)
	})
}

func TestClusterJoinAsVoters(t *testing.T) {
	t.Parallel()
	c := setup(t, 5)
	c.bootstrap(t, 3)
	c.start(t, "n4", 0)
	c.start(t, "n5", 0)

	t.Run("UpToMaxVotersJoinAsVoters", func(t *testing.T) {
		c.waitServers(t, []string{"n1", "n2", "n3", "n4", "n5"}, nil)
		c.waitReady(t)
		c.waitCatalog(t)
	})

	t.Run("LeftMemberRemoved", func(t *testing.T) {
		lid, _ := c.leader(t)
		gone := "n5"
		if lid == gone {
			gone = "n4"
		}
		c.stop(t, gone, false, membership.StateLeft)
		want := []string{"n1", "n2", "n3", "n4", "n5"}
		want = slicesDelete(want, gone)
		c.waitServers(t, want, nil)
	})

	t.Run("LeaderStopTransfersLeadership", func(t *testing.T) {
		lid, _ := c.leader(t)
		started := time.Now()
		c.stop(t, lid, false, membership.StateLeft)
		newID, _ := c.leader(t)
		t.Logf("leadership moved from %s to %s in %s", lid, newID, time.Since(started))
		require.NotEqual(t, lid, newID)
		c.apply(t, AddShard{ID: 30, DSN: "d30"})
		c.waitCatalog(t)
	})
}

func slicesDelete(s []string, v string) []string {
	out := s[:0:0]
	for _, x := range s {
		if x != v {
			out = append(out, x)
		}
	}
	return out
}

func TestAdminLifecycle(t *testing.T) {
	t.Parallel()

	t.Run("BeforeStart", func(t *testing.T) {
		t.Parallel()
		c := setup(t, 3)
		a, err := New(Config{NodeID: "n1", DataDir: t.TempDir(), BindAddr: "127.0.0.1:0", ClusterKey: clusterkeytest.Key()}, c.gossip.view())
		require.NoError(t, err)
		require.ErrorIs(t, a.Apply(context.Background(), SetSettings{IdempotencyWindow: time.Hour}), ErrNotStarted)
		require.ErrorIs(t, a.WaitReady(context.Background()), ErrNotStarted)
		id, api := a.Leader()
		require.Empty(t, id+api)
		require.True(t, a.Catalog().Empty())
		a.Stop()
		require.ErrorIs(t, a.Start(context.Background()), ErrStopped)
	})

	t.Run("NoBootstrapWithoutExpect", func(t *testing.T) {
		t.Parallel()
		c := setup(t, 3)
		a := c.start(t, "n1", 0)
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		require.ErrorIs(t, a.WaitReady(ctx), context.DeadlineExceeded)
		servers, err := a.Servers()
		require.NoError(t, err)
		require.Empty(t, servers)
		require.ErrorIs(t, a.Start(context.Background()), ErrAlreadyStarted)
	})

	t.Run("SingleNode", func(t *testing.T) {
		t.Parallel()
		c := setup(t, 1)
		c.bootstrap(t, 1)
		a := c.nodes["n1"]
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		require.NoError(t, a.Apply(ctx, SetSettings{IdempotencyWindow: time.Hour}))
		require.Equal(t, time.Hour, a.Catalog().Settings.IdempotencyWindow)
		select {
		case <-a.Changed():
		default:
			require.Fail(t, "Changed not nudged after apply")
		}
		a.Stop()
		require.ErrorIs(t, a.Apply(ctx, SetSettings{IdempotencyWindow: time.Hour}), ErrStopped)

		// Restarted alone on its data dir, it elects itself again and
		// keeps its catalog without proposing Bootstrap.
		delete(c.nodes, "n1")
		b := c.start(t, "n1", 1)
		c.waitReady(t)
		// Ready means a non-empty catalog: the restart may still be
		// replaying its log, so wait for the last entry to be applied.
		deadline := time.Now().Add(opTimeout)
		for b.Catalog().Settings.IdempotencyWindow != time.Hour && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		require.Equal(t, time.Hour, b.Catalog().Settings.IdempotencyWindow)
		require.Equal(t, []uint64{1}, epochNumbers(b.Catalog()))
	})
}

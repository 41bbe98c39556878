package membership

import (
	"sync/atomic"
	"testing"

	"github.com/hashicorp/memberlist"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/internal/clusterkey"
	"github.com/harvestd/harvest/internal/clusterkey/clusterkeytest"
)

// rogueRefusals is how many refusals the test waits for: more than one
// joining push/pull, so the rogue's later gossip (alive messages, periodic
// push/pulls) was refused too.
const rogueRefusals = 5

// TestUnprovenMember: a node that cannot prove the cluster key is never a
// member of a keyed cluster, whether it lacks the gossip key or holds it
// (an operator shared --gossip-key more widely than the cluster key).
func TestUnprovenMember(t *testing.T) {
	t.Parallel()
	gossipKey := clusterkeytest.Key().Derive(clusterkey.LabelGossip)

	t.Run("NoGossipKey", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		nodes := b.cluster(t, 2, nil)
		var failures atomic.Int32
		cfg := b.config("rogue", nodes[0])
		cfg.ClusterKey = clusterkey.Key{}
		cfg.joinAttempted = func(n int, err error) {
			if n == 0 && err != nil {
				failures.Add(1)
			}
		}
		rogue := start(t, cfg)

		require.Eventually(t, func() bool { return failures.Load() >= 3 }, convergeDeadline, pollTick,
			"join attempts did not fail")
		require.Equal(t, []string{"rogue"}, memberIDs(rogue.Alive()))
		requireUnknown(t, nodes, "rogue")
	})

	for name, key := range map[string]clusterkey.Key{"GossipKeyWithoutProof": {}, "WrongClusterKey": clusterkeytest.Other()} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			nodes := b.cluster(t, 2, nil)
			cfg := b.config("rogue", nodes[0])
			cfg.ClusterKey, cfg.GossipKey = key, gossipKey
			tune := cfg.tune
			cfg.tune = func(mc *memberlist.Config) {
				tune(mc)
				mc.Alive, mc.Merge = nil, nil // a rogue checks nobody's proof
			}
			rogue := start(t, cfg)

			// The members answer the rogue's push/pull before refusing
			// its state, so it learns them and gossips to them; every
			// one of its alive messages is refused.
			require.Eventually(t, func() bool { return rogue.list.NumMembers() == 3 }, convergeDeadline, pollTick,
				"the rogue did not learn the members")
			require.Eventually(t, func() bool {
				return nodes[0].Rejected()+nodes[1].Rejected() >= rogueRefusals
			}, convergeDeadline, pollTick, "the rogue's gossip was not refused")
			requireUnknown(t, nodes, "rogue")
			waitAlive(t, convergeDeadline, nodes, "node-1", "node-2")
		})
	}
}

// requireUnknown checks that none of nodes knows member id.
func requireUnknown(t *testing.T, nodes []*Membership, id string) {
	t.Helper()
	for _, n := range nodes {
		_, ok := find(n.Members(), id)
		require.False(t, ok, "%s knows %s", n.Local().NodeID, id)
		for _, ml := range n.list.Members() {
			require.NotEqual(t, id, ml.Name, "memberlist of %s lists %s", n.Local().NodeID, id)
		}
	}
}

package membership

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/internal/clusterkey"
	"github.com/harvestd/harvest/internal/clusterkey/clusterkeytest"
)

// TestRotate: a cluster moves from one cluster key to another in the
// documented steps (add the new key second, make it first, drop the
// old), every node a member throughout; then only the new key joins.
func TestRotate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	nodes := b.cluster(t, 3, nil)
	oldKey, newKey := clusterkeytest.Key(), clusterkeytest.Other()
	steps := []struct {
		name string
		key  clusterkey.Key
	}{
		{"AddTheNewKeySecond", oldKey.Join(newKey)},
		{"MakeItFirst", newKey.Join(oldKey)},
		{"DropTheOldKey", newKey},
	}
	for _, step := range steps {
		for _, n := range nodes {
			require.NoError(t, n.Rotate(context.Background(), step.key), step.name)
		}
		waitAlive(t, convergeDeadline, nodes, ids(nodes)...)
		if step.name == "DropTheOldKey" {
			// Gossip queued before MakeItFirst may still carry old-key
			// proofs (memberlist retransmits), which a node without the old
			// key refuses: a stale message, not a member lost, as the
			// waitAlive above and the check below show.
			continue
		}
		for _, n := range nodes {
			require.Zero(t, n.Rejected(), "%s: %s refused a member", step.name, n.Local().NodeID)
		}
	}
	require.Never(t, func() bool { return len(nodes[0].Alive()) < len(nodes) }, failureDeadline/5, pollTick,
		"every node stays a member after the old key is dropped")
	t.Run("TheNewKeyJoins", func(t *testing.T) {
		cfg := b.config("node-4", nodes[2])
		cfg.ClusterKey = newKey
		joined := start(t, cfg)
		waitAlive(t, convergeDeadline, append(nodes, joined), "node-1", "node-2", "node-3", "node-4")
	})
	t.Run("TheOldKeyIsRefused", func(t *testing.T) {
		cfg := b.config("rogue", nodes[0])
		cfg.ClusterKey = oldKey
		rogue := start(t, cfg)
		require.Never(t, func() bool {
			_, ok := find(nodes[0].Members(), "rogue")
			return ok || len(rogue.Alive()) > 1
		}, failureDeadline/5, pollTick)
	})
	t.Run("ZeroKeyIsAnError", func(t *testing.T) {
		require.ErrorIs(t, nodes[0].Rotate(context.Background(), clusterkey.Key{}), ErrNoClusterKey)
	})
}

package membership

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

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
			// Rotate waits for its metadata broadcast to go out (5 s by
			// default); a loaded CI machine needed more.
			ctx, cancel := context.WithTimeout(context.Background(), 3*convergeDeadline)
			require.NoError(t, n.Rotate(ctx, step.key), step.name)
			cancel()
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
	b.afterRotation(t, nodes, func(c *Config) { c.ClusterKey = newKey }, func(c *Config) { c.ClusterKey = oldKey })
	t.Run("ZeroKeyIsAnError", func(t *testing.T) {
		require.ErrorIs(t, nodes[0].Rotate(context.Background(), clusterkey.Key{}), ErrNoClusterKey)
	})
}

// TestRotateGossipKey: a cluster with an explicit gossip key moves to
// another in the documented steps (add the new key second, make it
// first, drop the old), every node alive throughout; then a node with
// the new key alone joins and one with the old key alone cannot.
func TestRotateGossipKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	oldKey, newKey := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	nodes := b.cluster(t, 3, func(c *Config) { c.GossipKey = oldKey })
	for _, step := range []struct {
		name string
		keys [][]byte
	}{
		{"AddTheNewKeySecond", [][]byte{oldKey, newKey}},
		{"MakeItFirst", [][]byte{newKey, oldKey}},
		{"DropTheOldKey", [][]byte{newKey}},
	} {
		for _, n := range nodes {
			require.NoError(t, n.RotateGossipKey(step.keys), step.name)
		}
		waitAlive(t, convergeDeadline, nodes, ids(nodes)...)
	}
	require.Never(t, func() bool { return len(nodes[0].Alive()) < len(nodes) }, failureDeadline/5, pollTick,
		"every node stays a member after the old key is dropped")
	b.afterRotation(t, nodes, func(c *Config) { c.GossipKey = newKey }, func(c *Config) { c.GossipKey = oldKey })
	t.Run("Errors", func(t *testing.T) {
		require.ErrorIs(t, nodes[0].RotateGossipKey(nil), ErrNoGossipKey)
		require.ErrorIs(t, nodes[0].RotateGossipKey([][]byte{[]byte("short")}), ErrInvalidGossipKey)
		derived := start(t, b.config("derived"))
		require.ErrorIs(t, derived.RotateGossipKey([][]byte{newKey}), ErrGossipKeyDerived, "rotate the cluster key instead")
	})
}

// afterRotation checks a rotated 3-node cluster: a node configured by
// withNew joins it, one configured by withOld never does.
func (b *testBundle) afterRotation(t *testing.T, nodes []*Membership, withNew, withOld func(*Config)) {
	t.Run("TheNewKeyJoins", func(t *testing.T) {
		cfg := b.config("node-4", nodes[2])
		withNew(&cfg)
		joined := start(t, cfg)
		waitAlive(t, convergeDeadline, append(nodes, joined), "node-1", "node-2", "node-3", "node-4")
	})
	t.Run("TheOldKeyIsRefused", func(t *testing.T) {
		cfg := b.config("stale", nodes[0])
		withOld(&cfg)
		stale := start(t, cfg)
		require.Never(t, func() bool {
			_, ok := find(nodes[0].Members(), "stale")
			return ok || len(stale.Alive()) > 1
		}, failureDeadline/5, pollTick)
	})
}

func TestParseGossipKeyFile(t *testing.T) {
	dir := t.TempDir()
	write := func(content string) string {
		path := filepath.Join(dir, fmt.Sprintf("k%d", time.Now().UnixNano()))
		require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
		return path
	}
	a, b := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32)), base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{2}, 16))
	keys, err := ParseGossipKeyFile(write("# rotation\n" + a + "\n\n  " + b + "  \n"))
	require.NoError(t, err)
	require.Equal(t, [][]byte{bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 16)}, keys, "the first encrypts")
	for name, content := range map[string]string{"Empty": "# nothing\n", "NotBase64": a + "\nnot base64!\n", "WrongSize": "c2hvcnQ=\n"} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseGossipKeyFile(write(content))
			require.ErrorIs(t, err, ErrInvalidGossipKey)
			require.NotContains(t, err.Error(), a, "no key in the error")
		})
	}
	_, err = ParseGossipKeyFile(filepath.Join(dir, "missing"))
	require.Error(t, err)
}

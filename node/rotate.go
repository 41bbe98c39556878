package node

import (
	"context"
	"fmt"

	"github.com/harvestd/harvest/internal/clusterkey"
	"github.com/harvestd/harvest/membership"
)

// RotateClusterKey replaces the cluster key of every channel while the
// node runs (harvestd re-reads --cluster-key-file on SIGHUP): from now on
// the key's first (primary) key signs forwarded requests, proves gossip
// membership, encrypts gossip (unless --gossip-key is set) and dials raft,
// and requests, members and raft peers under any of its keys are accepted.
// Rotating with every node up takes three rounds, each applied to every
// node before the next: add the new key as the file's second line, move
// it first, then remove the old line (README, Security).
func (n *Node) RotateClusterKey(ctx context.Context, key clusterkey.Key) error {
	if key.IsZero() {
		return ErrNoClusterKey
	}
	sign := key.Derive(clusterkey.LabelHTTP)
	n.httpKey.Store(&sign)
	if s := n.api.Load(); s != nil {
		s.SetNodeKeys(sign, key.DeriveAll(clusterkey.LabelHTTP))
	}
	if n.admin != nil {
		if err := n.admin.Rotate(key); err != nil {
			return fmt.Errorf("rotate raft key: %w", err)
		}
	}
	if g := n.gossipRef.Load(); g != nil {
		if err := g.Rotate(ctx, key); err != nil {
			return fmt.Errorf("rotate gossip key: %w", err)
		}
	}
	n.log.Info().Int("keys", key.Len()).Msg("cluster key rotated")
	return nil
}

// RotateGossipKey replaces the keyring of an explicit gossip key
// (harvestd re-reads --gossip-key-file on SIGHUP): keys[0] encrypts from
// now on, every key decrypts. Rotating with every node up takes the same
// three rounds as RotateClusterKey. A gossip key derived from the cluster
// key rotates with the cluster key (membership.ErrGossipKeyDerived).
func (n *Node) RotateGossipKey(keys [][]byte) error {
	g := n.gossipRef.Load()
	if g == nil {
		return fmt.Errorf("rotate gossip key: %w", membership.ErrNoGossipKey)
	}
	if err := g.RotateGossipKey(keys); err != nil {
		return err
	}
	n.log.Info().Int("keys", len(keys)).Msg("gossip key rotated")
	return nil
}

// signKey signs this node's own node requests: the rotated key, else the
// configured one.
func (n *Node) signKey() []byte {
	if k := n.httpKey.Load(); k != nil {
		return *k
	}
	return n.cfg.ClusterKey.Derive(clusterkey.LabelHTTP)
}

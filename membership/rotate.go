package membership

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/hashicorp/memberlist"

	"github.com/harvestd/harvest/internal/clusterkey"
)

// Rotate replaces the cluster key while the membership runs (harvestd
// does on SIGHUP): member proofs are made with key's primary from now on
// and checked against each of its keys, and, when the gossip key is
// derived from the cluster key (Config.GossipKey unset), the gossip
// keyring becomes key's: its primary encrypts, every one decrypts. This
// node's metadata is then gossiped again with its new proof, waiting as
// UpdateMeta does. A rotation keeps every node a member when each step
// reaches every node before the next: add the new key as a second key
// everywhere, make it the first everywhere, then remove the old one.
func (m *Membership) Rotate(ctx context.Context, key clusterkey.Key) error {
	if key.IsZero() {
		return fmt.Errorf("membership rotate: %w", ErrNoClusterKey)
	}
	m.mu.Lock()
	m.cfg.ClusterKey = key
	ring, meta, state := m.keyring, m.meta, m.state
	m.mu.Unlock()
	keys := key.DeriveAll(clusterkey.LabelMember)
	m.proofKeys.Store(&keys)
	if ring != nil && m.cfg.gossipDerived {
		if err := rotateKeyring(ring, key.DeriveAll(clusterkey.LabelGossip)); err != nil {
			return fmt.Errorf("membership rotate: gossip keyring: %w", err)
		}
	}
	if state != running {
		return nil
	}
	return m.UpdateMeta(ctx, meta)
}

// signKey is the key this node's member proof is made with (nil: none).
func (m *Membership) signKey() []byte {
	if keys := *m.proofKeys.Load(); len(keys) > 0 {
		return keys[0]
	}
	return nil
}

// rotateKeyring makes ring hold exactly keys, keys[0] the primary: add,
// switch, then drop, so that no moment has a key missing.
func rotateKeyring(ring *memberlist.Keyring, keys [][]byte) error {
	for _, k := range keys {
		if err := ring.AddKey(k); err != nil {
			return err
		}
	}
	if err := ring.UseKey(keys[0]); err != nil {
		return err
	}
	for _, old := range ring.GetKeys() {
		if !slices.ContainsFunc(keys, func(k []byte) bool { return bytes.Equal(k, old) }) {
			if err := ring.RemoveKey(old); err != nil {
				return err
			}
		}
	}
	return nil
}

// RotateGossipKey replaces an explicit gossip keyring (Config.GossipKey
// and GossipKeys) while the membership runs (harvestd re-reads
// --gossip-key-file on SIGHUP): keys[0] encrypts from now on, every key
// decrypts. As with Rotate, each step reaches every node before the next:
// add the new key second, make it first, then remove the old one. A
// gossip key derived from the cluster key rotates with Rotate instead
// (ErrGossipKeyDerived), and without encryption there is nothing to
// rotate (ErrNoGossipKey).
func (m *Membership) RotateGossipKey(keys [][]byte) error {
	if len(keys) == 0 {
		return fmt.Errorf("membership rotate gossip key: %w", ErrNoGossipKey)
	}
	for _, k := range keys {
		if err := checkGossipKey(k); err != nil {
			return fmt.Errorf("membership rotate gossip key: %w", err)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.cfg.gossipDerived:
		return fmt.Errorf("membership rotate gossip key: %w", ErrGossipKeyDerived)
	case m.keyring == nil:
		return fmt.Errorf("membership rotate gossip key: %w", ErrNoGossipKey)
	}
	if err := rotateKeyring(m.keyring, keys); err != nil {
		return fmt.Errorf("membership rotate gossip key: %w", err)
	}
	m.cfg.GossipKey, m.cfg.GossipKeys = keys[0], slices.Clone(keys[1:])
	return nil
}

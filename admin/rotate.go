package admin

import (
	"fmt"

	"github.com/harvestd/harvest/internal/clusterkey"
)

// Rotate replaces the cluster key of the raft transport while raft runs
// (harvestd does on SIGHUP): new connections dial with key's primary and
// accept any of its keys; open connections stay up. Rotate with every
// node holding both keys before any node drops the old one.
func (a *Admin) Rotate(key clusterkey.Key) error {
	if key.IsZero() {
		return fmt.Errorf("admin rotate: %w", ErrNoClusterKey)
	}
	a.raftKeys.set(key.DeriveAll(clusterkey.LabelRaft))
	return nil
}

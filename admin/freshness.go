package admin

import (
	"time"

	"github.com/hashicorp/raft"
)

// IsLeader reports whether this node leads the raft group right now.
func (a *Admin) IsLeader() bool {
	rn, err := a.running()
	return err == nil && rn.raft.State() == raft.Leader
}

// HeardWithin reports whether this node's catalog was current within d
// as far as raft can tell: it leads, or a leader contacted it less than
// d ago. A follower cut off from the leader for longer may hold a catalog
// that misses recent commands (a revoked token, say).
func (a *Admin) HeardWithin(d time.Duration) bool {
	rn, err := a.running()
	if err != nil {
		return false
	}
	if rn.raft.State() == raft.Leader {
		return true
	}
	last := rn.raft.LastContact()
	return !last.IsZero() && time.Since(last) < d
}

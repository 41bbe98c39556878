package admin

import (
	"github.com/hashicorp/raft"
)

// IsLeader reports whether this node leads the raft group right now.
func (a *Admin) IsLeader() bool {
	rn, err := a.running()
	return err == nil && rn.raft.State() == raft.Leader
}

package api

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// MemberInfo is one node as GET /cluster/members shows it.
type MemberInfo struct {
	NodeID     string `json:"node_id"`
	State      string `json:"state"`
	GossipAddr string `json:"gossip_addr,omitempty"`
	APIAddr    string `json:"api_addr,omitempty"`
	RaftAddr   string `json:"raft_addr,omitempty"`
	Version    string `json:"version,omitempty"`
	// Shards are the shards the node serves (this node) or that the ring
	// gives it (other alive nodes).
	Shards []uint16 `json:"shards"`
	Self   bool     `json:"self"`
}

// ClusterView lists the cluster's members as this node sees them.
type ClusterView interface {
	Members() []MemberInfo
}

// members handles GET /cluster/members.
func (s *Server) members(c *gin.Context) {
	out := []MemberInfo{}
	if s.cfg.Cluster != nil {
		out = append(out, s.cfg.Cluster.Members()...)
	}
	c.JSON(http.StatusOK, gin.H{"members": out})
}

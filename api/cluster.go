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

// RoutingView is GET /cluster/routing: where this node sends requests.
// It names no database (no DSNs).
type RoutingView struct {
	// PlacementEpoch is the catalog's current placement epoch (0 for a
	// catalog that never changes).
	PlacementEpoch uint64 `json:"placement_epoch"`
	// Shards lists every readable shard.
	Shards []ShardRoute `json:"shards"`
	// Placements are the distinct placements (readable and writable
	// shards) inside the idempotency window, current first: a keyed start
	// checks the shard each of them picks.
	Placements []PlacementView `json:"placements"`
}

// PlacementView is one placement of the catalog.
type PlacementView struct {
	Readable []uint16 `json:"readable"`
	Writable []uint16 `json:"writable"`
}

// ShardRoute is one shard's routing.
type ShardRoute struct {
	ShardID uint16 `json:"shard_id"`
	// State is writable (takes new placements) or readable (serves its
	// runs only: draining or read-only).
	State string `json:"state"`
	// Owner is the node that serves the shard as this node believes ("":
	// unknown); OwnerAPI its API base URL as clients reach it
	// (--advertise-client, else --advertise-http; "" when Self).
	Owner    string `json:"owner,omitempty"`
	OwnerAPI string `json:"owner_api,omitempty"`
	Self     bool   `json:"self"`
}

// RoutingSource is a ClusterView that also tells the routing.
type RoutingSource interface {
	Routing() RoutingView
}

// routing handles GET /cluster/routing.
func (s *Server) routing(c *gin.Context) {
	if r, ok := s.cfg.Cluster.(RoutingSource); ok {
		c.JSON(http.StatusOK, r.Routing())
		return
	}
	v := RoutingView{Shards: []ShardRoute{}, Placements: []PlacementView{{Readable: s.router.Shards(), Writable: s.router.Shards()}}}
	for _, id := range s.router.Shards() {
		v.Shards = append(v.Shards, ShardRoute{ShardID: id, State: "writable", Owner: s.cfg.NodeID, Self: true})
	}
	c.JSON(http.StatusOK, v)
}

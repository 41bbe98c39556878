package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// Member is one node of the cluster as the node that answered sees it.
type Member struct {
	NodeID string `json:"node_id"`
	// State is "alive", "dead" or "left" (a graceful leave).
	State      string `json:"state"`
	GossipAddr string `json:"gossip_addr,omitempty"`
	// APIAddr is the host:port of the member's HTTP API.
	APIAddr  string `json:"api_addr,omitempty"`
	RaftAddr string `json:"raft_addr,omitempty"`
	Version  string `json:"version,omitempty"`
	// Shards are the shards the member serves, as the answering node
	// reports them itself (Self) or as the ring assigns them (other alive
	// members); empty for members that are not alive.
	Shards []uint16 `json:"shards"`
	// Self marks the node that answered.
	Self bool `json:"self"`
	// Raw is this member's JSON object as the server sent it.
	Raw json.RawMessage `json:"-"`
}

// Members lists the cluster's members, dead and left ones included, as
// the node the client talks to sees them. A standalone node (harvestd dev)
// lists itself alone.
func (c *Client) Members(ctx context.Context) ([]Member, error) {
	var body struct {
		Members []json.RawMessage `json:"members"`
	}
	if _, err := c.do(ctx, call{method: http.MethodGet, path: "/cluster/members"}, &body); err != nil {
		return nil, err
	}
	members := make([]Member, len(body.Members))
	for i, raw := range body.Members {
		if err := json.Unmarshal(raw, &members[i]); err != nil {
			return nil, fmt.Errorf("GET /cluster/members: decode member %d: %w", i, err)
		}
		members[i].Raw = raw
	}
	return members, nil
}

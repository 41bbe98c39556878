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
	// State is "alive", "dead", "left" (a graceful leave) or "untrusted"
	// (alive in gossip, but with TLS its certificate has not verified).
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
	return getList(ctx, c, "/cluster/members", "members", "member", func(m *Member, raw json.RawMessage) { m.Raw = raw })
}

// getList GETs path, whose answer holds a list of objects under key, and
// decodes each object into a T; keep stores the object's JSON in it.
func getList[T any](ctx context.Context, c *Client, path, key, noun string, keep func(*T, json.RawMessage)) ([]T, error) {
	var body map[string]json.RawMessage
	if _, err := c.do(ctx, call{method: http.MethodGet, path: path}, &body); err != nil {
		return nil, err
	}
	var raws []json.RawMessage
	if list, ok := body[key]; ok {
		if err := json.Unmarshal(list, &raws); err != nil {
			return nil, fmt.Errorf("GET %s: decode %s: %w", path, key, err)
		}
	}
	out := make([]T, len(raws))
	for i, raw := range raws {
		if err := json.Unmarshal(raw, &out[i]); err != nil {
			return nil, fmt.Errorf("GET %s: decode %s %d: %w", path, noun, i, err)
		}
		keep(&out[i], raw)
	}
	return out, nil
}

// Peer is one server of the raft group that keeps the shard catalog.
type Peer struct {
	// ID is the server's node id.
	ID string `json:"id"`
	// Addr is its raft host:port.
	Addr string `json:"addr"`
	// Voter is false for a non-voter, which follows the log without a vote.
	Voter  bool `json:"voter"`
	Leader bool `json:"leader"`
	// Raw is this peer's JSON object as the server sent it.
	Raw json.RawMessage `json:"-"`
}

// RaftPeers lists the raft servers. A node without a raft catalog answers
// ErrNotFound.
func (c *Client) RaftPeers(ctx context.Context) ([]Peer, error) {
	return getList(ctx, c, "/admin/raft/peers", "peers", "peer", func(p *Peer, raw json.RawMessage) { p.Raw = raw })
}

// RemovePeer removes a raft server, such as a dead node that will not come
// back, by its node id.
func (c *Client) RemovePeer(ctx context.Context, id string) error {
	if id == "" {
		return fmt.Errorf("peer id is empty: %w", ErrInvalid)
	}
	_, err := c.do(ctx, call{method: http.MethodDelete, path: "/admin/raft/peers/" + seg(id)}, nil)
	return err
}

// Routing is where the answering node sends requests: every readable
// shard with its owner, and the placements a keyed start checks. It names
// no database.
type Routing struct {
	// PlacementEpoch is the catalog's placement epoch (0 for a catalog
	// that never changes).
	PlacementEpoch uint64       `json:"placement_epoch"`
	Shards         []ShardRoute `json:"shards"`
	// Placements are the distinct placements inside the idempotency
	// window, current first.
	Placements []Placement `json:"placements"`
	// Raw is the answer's JSON as the server sent it.
	Raw json.RawMessage `json:"-"`
}

// ShardRoute is one shard's routing.
type ShardRoute struct {
	ShardID uint16 `json:"shard_id"`
	// State is "writable" (takes new placements) or "readable" (serves
	// its runs only: draining or read-only).
	State string `json:"state"`
	// Owner is the node serving the shard as the answering node believes
	// ("": unknown); OwnerAPI is its API base URL.
	Owner    string `json:"owner,omitempty"`
	OwnerAPI string `json:"owner_api,omitempty"`
	// Self marks shards the answering node serves.
	Self bool `json:"self"`
}

// Placement is one placement of the shard catalog: the shards reads and
// new runs go to.
type Placement struct {
	Readable []uint16 `json:"readable"`
	Writable []uint16 `json:"writable"`
}

// Routing reads the answering node's routing (GET /cluster/routing). A
// standalone node lists its own shards, all writable and served by it.
func (c *Client) Routing(ctx context.Context) (*Routing, error) {
	var r Routing
	rep, err := c.do(ctx, call{method: http.MethodGet, path: "/cluster/routing"}, &r)
	if err != nil {
		return nil, err
	}
	r.Raw = rep.body
	return &r, nil
}

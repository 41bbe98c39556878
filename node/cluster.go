package node

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/harvestd/harvest/api"
	"github.com/harvestd/harvest/engine"
	"github.com/harvestd/harvest/internal/shardmgr"
	"github.com/harvestd/harvest/membership"
	"github.com/harvestd/harvest/ring"
)

// view is the membership the node routes and owns shards by: gossip in a
// cluster, just this node when standalone.
type view interface {
	Alive() []membership.Member
	Members() []membership.Member
	Changed() <-chan struct{}
}

// standalone is the view of a node without gossip.
type standalone struct {
	self    membership.Member
	changed chan struct{}
}

func newStandalone(nodeID, apiAddr string) *standalone {
	m := membership.Member{Meta: membership.Meta{NodeID: nodeID, APIAddr: apiAddr}, State: membership.StateAlive}
	return &standalone{self: m, changed: make(chan struct{})}
}

func (s *standalone) Alive() []membership.Member   { return []membership.Member{s.self} }
func (s *standalone) Members() []membership.Member { return []membership.Member{s.self} }
func (s *standalone) Changed() <-chan struct{}     { return s.changed }

// members adapts a view to what the shard manager needs; changed is the
// manager's own copy of the view's nudges.
type members struct {
	v       view
	changed <-chan struct{}
}

var _ shardmgr.Members = members{}

func (m members) AliveIDs() []string {
	var ids []string
	for _, mb := range m.v.Alive() {
		ids = append(ids, mb.NodeID)
	}
	return ids
}

// Gone: known to be dead or left. An unknown holder is not gone: a node
// that has not joined yet must not take leases from a cluster it cannot see.
func (m members) Gone(nodeID string) bool {
	for _, mb := range m.v.Members() {
		if mb.NodeID == nodeID {
			return mb.State == membership.StateDead || mb.State == membership.StateLeft
		}
	}
	return false
}

func (m members) Changed() <-chan struct{} { return m.changed }

// fanOut copies every nudge of src to each of outs (buffered(1), never
// blocking) until ctx ends.
func fanOut(ctx context.Context, src <-chan struct{}, outs ...chan struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-src:
			for _, o := range outs {
				select {
				case o <- struct{}{}:
				default:
				}
			}
		}
	}
}

// placement is the catalog the router places by: the current readable and
// writable sets and the earlier ones still inside the idempotency window.
type placement interface {
	Current() ring.Catalog
	// Epochs returns, from one catalog state, the current placement epoch
	// (0 for a catalog that never changes) and the distinct placements
	// inside the window, the current one first.
	Epochs(now time.Time) (uint64, []ring.Catalog)
}

// staticPlacement is a catalog that never changes.
type staticPlacement struct{ cat ring.Catalog }

func (p staticPlacement) Current() ring.Catalog { return p.cat }
func (p staticPlacement) Epochs(time.Time) (uint64, []ring.Catalog) {
	return 0, []ring.Catalog{p.cat}
}

// router places requests by the ring over the catalog and routes shards to
// their owners; it implements api.Router.
type router struct {
	// tokensReady, when set, fails while the token table cannot verify
	// (a raft follower catching up with the leader).
	tokensReady func() error
	// lagging: the catalog is replicated (raft) and may trail the leader.
	lagging bool
	// secure: the nodes serve their APIs over TLS (https).
	secure bool
	self   string
	src    placement
	mgr    *shardmgr.Manager
	view   view
}

// Place places (name, routingKey) by the current epoch and lists the
// other shards the epochs still inside the window placed it on.
func (r *router) Place(name, routingKey string) (api.Placement, error) {
	epoch, views := r.src.Epochs(time.Now())
	if len(views) == 0 || len(views[0].Readable) == 0 {
		return api.Placement{}, fmt.Errorf("the shard catalog is not loaded yet: %w", engine.ErrNotRunning)
	}
	current, err := ring.PickShard(views[0], name, routingKey)
	if err != nil {
		return api.Placement{}, err
	}
	p := api.Placement{Epoch: epoch, Shard: current}
	for _, v := range views[1:] {
		if s, err := ring.PickShard(v, name, routingKey); err == nil && s != current && !slices.Contains(p.Earlier, s) {
			p.Earlier = append(p.Earlier, s)
		}
	}
	return p, nil
}

var _ api.Router = (*router)(nil)

func (r *router) ForStart(name, workflowID, key string) (api.Target, error) {
	routing := workflowID
	if routing == "" {
		routing = key
	}
	if routing == "" {
		if local := r.localWritable(); len(local) > 0 {
			return r.ForShard(local[rand.IntN(len(local))])
		}
		routing = uuid.NewString()
	}
	shard, err := ring.PickShard(r.src.Current(), name, routing)
	if err != nil {
		return api.Target{}, err
	}
	return r.ForShard(shard)
}

func (r *router) localWritable() []uint16 {
	var out []uint16
	for _, s := range r.mgr.Owned() {
		if slices.Contains(r.src.Current().Writable, s) {
			out = append(out, s)
		}
	}
	return out
}

func (r *router) ForShard(shard uint16) (api.Target, error) {
	readable := r.src.Current().Readable
	if len(readable) == 0 {
		// A node that just (re)started has not loaded the catalog yet: the
		// shard may well exist. Retry, never a final 404.
		return api.Target{}, fmt.Errorf("the shard catalog is not loaded yet: %w", engine.ErrNotRunning)
	}
	if !slices.Contains(readable, shard) {
		if r.lagging {
			// A raft catalog may lag the leader (a restarted node
			// replaying its log): the shard may exist. Retry, not 404.
			return api.Target{}, fmt.Errorf("shard %d is not in this node's catalog yet: %w", shard, engine.ErrNotRunning)
		}
		return api.Target{}, fmt.Errorf("shard %d is not in the catalog: %w", shard, engine.ErrNotFound)
	}
	if e, ok := r.mgr.Engine(shard); ok {
		return api.Target{ShardID: shard, Shard: e}, nil
	}
	alive := r.view.Alive()
	ids := make([]string, len(alive))
	for i, m := range alive {
		ids[i] = m.NodeID
	}
	owner, _ := ring.OwnerOf(shard, ids)
	t := api.Target{ShardID: shard, Owner: owner}
	if owner == r.self {
		return t, nil // still acquiring the lease: 503, retry
	}
	for _, m := range alive {
		if m.NodeID == owner && m.APIAddr != "" {
			t.URL = apiURL(r.secure, m.APIAddr)
		}
	}
	return t, nil
}

func (r *router) Shards() []uint16 { return slices.Clone(r.src.Current().Readable) }

func (r *router) MintWorkflowID(name string, shard uint16) (string, error) {
	return ring.MintForShard(r.src.Current(), name, shard, uuid.NewString)
}

func (r *router) Ready() error {
	var missing []uint16
	for _, s := range r.mgr.Wanted() {
		if _, ok := r.mgr.Engine(s); !ok {
			missing = append(missing, s)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("shards %v of this node are not leased yet", missing)
	}
	if len(r.src.Current().Readable) == 0 {
		return errors.New("no shards")
	}
	if r.tokensReady != nil {
		return r.tokensReady()
	}
	return nil
}

// Version is the harvestd version advertised in gossip metadata.
const Version = "0.1.0-dev"

// catalog is the static catalog: every shard readable and writable.
func (n *Node) catalog() ring.Catalog {
	ids := slices.Sorted(maps.Keys(n.pools))
	return ring.Catalog{Readable: ids, Writable: slices.Clone(ids)}
}

// clusterInfo answers GET /cluster/members.
type clusterInfo struct{ r *router }

func (c clusterInfo) Members() []api.MemberInfo {
	var alive []string
	for _, m := range c.r.view.Alive() {
		alive = append(alive, m.NodeID)
	}
	var out []api.MemberInfo
	for _, m := range c.r.view.Members() {
		info := api.MemberInfo{NodeID: m.NodeID, State: m.State.String(), GossipAddr: m.GossipAddr,
			APIAddr: m.APIAddr, RaftAddr: m.RaftAddr, Version: m.Version, Self: m.NodeID == c.r.self, Shards: []uint16{}}
		switch {
		case info.Self:
			info.Shards = c.r.mgr.Owned()
		case m.State == membership.StateAlive:
			for _, s := range c.r.src.Current().Readable {
				if owner, _ := ring.OwnerOf(s, alive); owner == m.NodeID {
					info.Shards = append(info.Shards, s)
				}
			}
		}
		out = append(out, info)
	}
	return out
}

// Routing answers GET /cluster/routing: every readable shard with its
// state and owner, and the placement epochs inside the window.
func (c clusterInfo) Routing() api.RoutingView {
	cur := c.r.src.Current()
	v := api.RoutingView{Shards: []api.ShardRoute{}, Placements: []api.PlacementView{}}
	for _, id := range cur.Readable {
		v.Shards = append(v.Shards, c.shardRoute(id, slices.Contains(cur.Writable, id)))
	}
	number, placements := c.r.src.Epochs(time.Now())
	v.PlacementEpoch = number
	for _, p := range placements {
		v.Placements = append(v.Placements, api.PlacementView{Readable: nonNil(p.Readable), Writable: nonNil(p.Writable)})
	}
	return v
}

func (c clusterInfo) shardRoute(id uint16, writable bool) api.ShardRoute {
	sr := api.ShardRoute{ShardID: id, State: "readable"}
	if writable {
		sr.State = "writable"
	}
	if t, err := c.r.ForShard(id); err == nil {
		sr.Owner, sr.OwnerAPI, sr.Self = t.Owner, c.clientURL(t.Owner, t.URL), t.Shard != nil
		if sr.Self {
			sr.Owner = c.r.self
		}
	}
	return sr
}

// clientURL is where clients reach node id: its --advertise-client, else
// url (its --advertise-http).
func (c clusterInfo) clientURL(id, url string) string {
	for _, m := range c.r.view.Alive() {
		if m.NodeID == id && m.ClientAddr != "" && url != "" {
			return apiURL(c.r.secure, m.ClientAddr)
		}
	}
	return url
}

func nonNil(ids []uint16) []uint16 {
	if ids == nil {
		return []uint16{}
	}
	return ids
}

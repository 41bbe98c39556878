package client

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/harvestd/harvest/ring"
)

// RoutingTTLDefault is how long a routing client uses a routing table
// before it reads the next one (in the background: requests never wait).
const RoutingTTLDefault = 2 * time.Second

// WithRouting makes the client send every request that names its shard
// straight to the shard's owner: a start or signal-with-start with a
// workflow id or an idempotency key (placed as the nodes place them,
// package ring) and every call by execution id (the id names its shard).
// The client learns the owners from the base node (GET /cluster/routing,
// scope read) and reads them again every ttl (0: RoutingTTLDefault), and
// at once after an attempt at an owner failed; until it has a table, and
// for every other request, it uses the base node. Any node forwards what
// it does not own, so a stale table costs a hop, never a second run: the
// owner decides. An owner that refuses the connection is skipped for the
// base node at once (nothing was sent). The owners' addresses are what
// nodes advertise (harvestd --advertise-client, else --advertise-http):
// they must be reachable from the client.
func WithRouting(ttl time.Duration) Option {
	return func(c *Client) {
		c.routes = &router{ttl: cmp0(ttl, RoutingTTLDefault)}
	}
}

func cmp0(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// route is what a call tells about its shard.
type route struct {
	shard    uint16 // with byShard
	byShard  bool
	name     string // workflow name, with key
	routeKey string // workflow id or idempotency key ("": not routed)
}

// byExecution routes a call by its execution id ("" or malformed: the
// base node, which answers the error).
func byExecution(id string) route {
	if _, err := uuid.Parse(id); err != nil || len(id) < 4 {
		return route{}
	}
	shard, err := strconv.ParseUint(id[:4], 16, 16)
	if err != nil {
		return route{}
	}
	return route{shard: uint16(shard), byShard: true}
}

// byKey routes a start by (workflow name, workflow id or else key).
func byKey(name, workflowID, key string) route {
	if workflowID != "" {
		return route{name: name, routeKey: workflowID}
	}
	return route{name: name, routeKey: key}
}

// router is a client's routing table and its refresh.
type router struct {
	ttl time.Duration

	mu         sync.Mutex
	table      *routeTable
	fetched    time.Time
	refreshing bool
}

// routeTable is one reading of GET /cluster/routing.
type routeTable struct {
	placement ring.Catalog
	owners    map[uint16]string // shard -> base URL of its owner
}

// ownerOf is the base URL of r's shard owner ("": unknown).
func (t *routeTable) ownerOf(r route) string {
	shard := r.shard
	if !r.byShard {
		if r.routeKey == "" {
			return ""
		}
		s, err := ring.PickShard(t.placement, r.name, r.routeKey)
		if err != nil {
			return ""
		}
		shard = s
	}
	return t.owners[shard]
}

// baseFor is where an attempt of cl goes: its shard's owner when the
// table knows it, else base. A table older than the ttl is read again in
// the background.
func (c *Client) baseFor(cl call) string {
	rt := c.routes
	if rt == nil || (!cl.route.byShard && cl.route.routeKey == "") {
		return c.baseURL
	}
	rt.mu.Lock()
	t, stale := rt.table, time.Since(rt.fetched) > rt.ttl
	fetch := stale && !rt.refreshing
	rt.refreshing = rt.refreshing || fetch
	rt.mu.Unlock()
	switch {
	case fetch && t == nil: // the first routed call reads the table itself
		c.refreshRoutes()
		t = rt.load()
	case fetch:
		go c.refreshRoutes()
	}
	if t == nil {
		return c.baseURL
	}
	if owner := t.ownerOf(cl.route); owner != "" {
		return owner
	}
	return c.baseURL
}

// refreshRoutes reads the base node's routing into the table; a failure
// keeps the old table until the next try.
func (c *Client) refreshRoutes() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	base := &Client{baseURL: c.baseURL, http: c.http, token: c.token, userAgent: c.userAgent, retry: RetryPolicy{MaxAttempts: 1}}
	r, err := base.Routing(ctx)
	rt := c.routes
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.refreshing = false
	rt.fetched = time.Now()
	if err == nil {
		rt.table = newRouteTable(r, c.baseURL)
	}
}

func (rt *router) load() *routeTable {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.table
}

// staleRoutes makes the next routed call read the table again.
func (c *Client) staleRoutes() {
	if rt := c.routes; rt != nil {
		rt.mu.Lock()
		rt.fetched = time.Time{}
		rt.mu.Unlock()
	}
}

// newRouteTable reads r, the answer of the node at base: the shards it
// serves itself are reached at base.
func newRouteTable(r *Routing, base string) *routeTable {
	t := &routeTable{owners: map[uint16]string{}}
	if len(r.Placements) > 0 {
		t.placement = ring.Catalog{Readable: r.Placements[0].Readable, Writable: r.Placements[0].Writable}
	}
	for _, s := range r.Shards {
		switch {
		case s.Self:
			t.owners[s.ShardID] = base
		case s.OwnerAPI != "":
			t.owners[s.ShardID] = strings.TrimRight(s.OwnerAPI, "/")
		}
	}
	return t
}

// refused reports a dial that found nothing listening: the request was
// never sent, so it may go elsewhere whatever it is.
func refused(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

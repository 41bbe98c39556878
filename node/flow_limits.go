package node

import (
	"context"
	"maps"
	"slices"
	"sync/atomic"

	"github.com/rs/zerolog"

	"github.com/harvestd/harvest/admin"
	"github.com/harvestd/harvest/api"
	"github.com/harvestd/harvest/engine"
	"github.com/harvestd/harvest/flowlimit"
	"github.com/harvestd/harvest/internal/limitstore"
)

// flowLimits keeps the flow control limits set at run time: the API
// changes and lists them, the shard engines read them (current).
type flowLimits interface {
	api.FlowLimits
	// current is the limits now, by flowlimit.Key, with their version,
	// which changes whenever they may have: lock-free, and the map is
	// shared (never modify it).
	current() (version uint64, limits map[string]flowlimit.Limit)
}

// startFlowLimits opens the flow limits set at run time: the raft
// catalog's, or, on a node without gossip, its shard database's. A
// cluster on static shards has no place to keep them (the routes answer
// 404, and the engines apply the declared limits only).
func (n *Node) startFlowLimits(ctx context.Context) error {
	log := n.logger("limits")
	if n.admin != nil {
		n.flowLimits = &raftLimits{a: n.admin, secure: n.tls != nil, log: log}
		return nil
	}
	if n.cfg.Gossip != nil || len(n.pools) == 0 {
		return nil
	}
	store, err := limitstore.Load(ctx, n.pools[slices.Min(slices.Collect(maps.Keys(n.pools)))])
	if err != nil {
		return err
	}
	n.flowLimits = &localLimits{store: store, log: log}
	return nil
}

// engineLimits is the shard engines' Config.Limits (nil: the declared
// limits only). Every engine of the node reads the same limits.
func (n *Node) engineLimits() func() engine.RuntimeLimits {
	if n.flowLimits == nil {
		return nil
	}
	return (&runtimeLimits{src: n.flowLimits.current}).get
}

// runtimeLimits is the engines' form of the limits set at run time,
// built once per version of its source and shared by every call until
// the next: the engines read it on every start, so it must be cheap.
type runtimeLimits struct {
	src func() (uint64, map[string]flowlimit.Limit)
	cur atomic.Pointer[versionedLimits]
}

// versionedLimits is the engines' form of one version of the limits.
type versionedLimits struct {
	version uint64
	limits  engine.RuntimeLimits
}

// get is the limits now. Two calls that race on a new version may both
// build it; either result is the same.
func (r *runtimeLimits) get() engine.RuntimeLimits {
	version, limits := r.src()
	if v := r.cur.Load(); v != nil && v.version == version {
		return v.limits
	}
	v := &versionedLimits{version: version, limits: toRuntime(limits)}
	r.cur.Store(v)
	return v.limits
}

// toRuntime is limits as the engine takes them: an activity's record
// sets both its concurrency and its rate limit (zero ones lift the
// declared ones).
func toRuntime(limits map[string]flowlimit.Limit) engine.RuntimeLimits {
	var rt engine.RuntimeLimits
	for _, l := range limits {
		switch l.Kind {
		case flowlimit.Workflow:
			rt.Workflows = put(rt.Workflows, l.Name, l.Concurrency())
		case flowlimit.Activity:
			rt.Activities = put(rt.Activities, l.Name, l.Concurrency())
			rt.Rates = put(rt.Rates, l.Name, l.Rate())
		}
	}
	return rt
}

// put sets m[k] = v, making m when nil.
func put[V any](m map[string]V, k string, v V) map[string]V {
	if m == nil {
		m = map[string]V{}
	}
	m[k] = v
	return m
}

// raftLimits keeps a cluster's flow limits in the raft catalog: every
// node's engines read its own replica (a change reaches a node when it
// applies the entry).
type raftLimits struct {
	a      *admin.Admin
	secure bool
	log    zerolog.Logger
}

var _ flowLimits = (*raftLimits)(nil)

func (r *raftLimits) SetLimit(ctx context.Context, l flowlimit.Limit) (flowlimit.Limit, error) {
	if err := r.apply(ctx, admin.PutLimit{Limit: l}); err != nil {
		return flowlimit.Limit{}, err
	}
	r.log.Info().Str("kind", string(l.Kind)).Str("name", l.Name).Int("max_running", l.MaxRunning).
		Float64("per_second", l.PerSecond).Msg("flow limit set")
	return r.a.Catalog().Limits[l.Key()], nil
}

func (r *raftLimits) Limits(context.Context) ([]flowlimit.Limit, error) {
	return flowlimit.Sorted(r.a.Catalog().Limits), nil
}

func (r *raftLimits) DeleteLimit(ctx context.Context, kind flowlimit.Kind, name string) error {
	if err := r.apply(ctx, admin.DeleteLimit{Kind: kind, Name: name}); err != nil {
		return err
	}
	r.log.Info().Str("kind", string(kind)).Str("name", name).Msg("flow limit deleted")
	return nil
}

// current is the replica's limits; its raft index is their version.
func (r *raftLimits) current() (uint64, map[string]flowlimit.Limit) {
	cat := r.a.Catalog()
	return cat.Index, cat.Limits
}

// apply proposes cmd; a follower answers *api.LeaderError, which the API
// forwards to the leader.
func (r *raftLimits) apply(ctx context.Context, cmd admin.Command) error {
	return proposalErr(r.a.Apply(ctx, cmd), r.secure)
}

// localLimits keeps the flow limits of a node without a raft catalog in
// its shard database.
type localLimits struct {
	store *limitstore.Store
	log   zerolog.Logger
}

var _ flowLimits = (*localLimits)(nil)

func (l *localLimits) SetLimit(ctx context.Context, lim flowlimit.Limit) (flowlimit.Limit, error) {
	stored, err := l.store.SetLimit(ctx, lim)
	if err == nil {
		l.log.Info().Str("kind", string(lim.Kind)).Str("name", lim.Name).Int("max_running", lim.MaxRunning).
			Float64("per_second", lim.PerSecond).Msg("flow limit set")
	}
	return stored, err
}

func (l *localLimits) Limits(ctx context.Context) ([]flowlimit.Limit, error) {
	return l.store.Limits(ctx)
}

func (l *localLimits) DeleteLimit(ctx context.Context, kind flowlimit.Kind, name string) error {
	err := l.store.DeleteLimit(ctx, kind, name)
	if err == nil {
		l.log.Info().Str("kind", string(kind)).Str("name", name).Msg("flow limit deleted")
	}
	return err
}

func (l *localLimits) current() (uint64, map[string]flowlimit.Limit) {
	s := l.store.Current()
	return s.Version, s.Limits
}

package node

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/rs/zerolog"

	"github.com/harvestd/harvest/admin"
	"github.com/harvestd/harvest/api"
	"github.com/harvestd/harvest/engine"
	"github.com/harvestd/harvest/httpactivity"
	"github.com/harvestd/harvest/internal/activitystore"
)

// httpActivities keeps the HTTP activities registered at run time: the
// API changes and lists them, the shard engines resolve attempts from
// them.
type httpActivities interface {
	api.HTTPActivities
	engine.ActivityResolver
}

// startHTTPActivities opens the HTTP activities: the raft catalog's, or,
// on a node without gossip, its shard database's. A cluster on static
// shards has no place to keep them (the routes answer 404, and the
// engines run Go activities only).
func (n *Node) startHTTPActivities(ctx context.Context) error {
	log := n.logger("activities")
	if n.admin != nil {
		li, staleAfter := n.catalogIndex(ctx), n.cfg.Auth.withDefaults().StaleAfter
		n.activities = &raftActivities{a: n.admin, secure: n.tls != nil, log: log,
			current: func() bool { return li.current(n.admin, time.Now(), staleAfter) }}
		return nil
	}
	if n.cfg.Gossip != nil || len(n.pools) == 0 {
		return nil
	}
	store, err := activitystore.Load(ctx, n.pools[slices.Min(slices.Collect(maps.Keys(n.pools)))])
	if err != nil {
		return err
	}
	n.activities = &localActivities{store: store, log: log}
	return nil
}

// engineActivities is the resolver of the shard engines (nil: none).
func (n *Node) engineActivities() engine.ActivityResolver {
	if n.activities == nil {
		return nil
	}
	return n.activities
}

// raftActivities keeps a cluster's HTTP activities in the raft catalog:
// every node's engines resolve attempts from its own replica (a
// registration reaches a node when it applies the entry).
type raftActivities struct {
	a      *admin.Admin
	secure bool
	log    zerolog.Logger
	// current reports whether this node's catalog is known to be
	// current (leaderIndex, as for tokens and webhooks).
	current func() bool
}

var _ httpActivities = (*raftActivities)(nil)

func (r *raftActivities) CreateHTTPActivity(ctx context.Context, a httpactivity.Config) (httpactivity.Config, error) {
	if err := r.apply(ctx, admin.PutHTTPActivity{Activity: a}); err != nil {
		return httpactivity.Config{}, err
	}
	r.log.Info().Str("activity", a.Name).Msg("http activity registered")
	return r.a.Catalog().HTTPActivities[a.Name].Clone(), nil
}

func (r *raftActivities) HTTPActivities(context.Context) ([]httpactivity.Config, error) {
	acts := r.a.Catalog().HTTPActivities
	out := make([]httpactivity.Config, 0, len(acts))
	for _, name := range slices.Sorted(maps.Keys(acts)) {
		out = append(out, acts[name].Clone())
	}
	return out, nil
}

// HTTPActivity finds name in this node's replica. A name the replica
// lacks while it is not known to be current (a restarted node replays
// its log only once the leader's replication reaches it) may be
// registered: the attempt is retried, never failed for good.
func (r *raftActivities) HTTPActivity(name string) (httpactivity.Config, bool, error) {
	return lookupActivity(r.a.Catalog(), name, r.current)
}

func lookupActivity(cat admin.Catalog, name string, current func() bool) (httpactivity.Config, bool, error) {
	a, ok := cat.HTTPActivities[name]
	if !ok && !current() {
		return httpactivity.Config{}, false, fmt.Errorf("activity %q is not in this node's catalog, which may trail the leader's: %w",
			name, ErrCatalogBehind)
	}
	return a.Clone(), ok, nil
}

func (r *raftActivities) DeleteHTTPActivity(ctx context.Context, name string) error {
	if err := r.apply(ctx, admin.DeleteHTTPActivity{Name: name}); err != nil {
		return err
	}
	r.log.Info().Str("activity", name).Msg("http activity deleted")
	return nil
}

// apply proposes cmd; a follower answers *api.LeaderError, which the API
// forwards to the leader.
func (r *raftActivities) apply(ctx context.Context, cmd admin.Command) error {
	return proposalErr(r.a.Apply(ctx, cmd), r.secure)
}

// localActivities keeps the HTTP activities of a node without a raft
// catalog in its shard database.
type localActivities struct {
	store *activitystore.Store
	log   zerolog.Logger
}

var _ httpActivities = (*localActivities)(nil)

func (l *localActivities) CreateHTTPActivity(ctx context.Context, a httpactivity.Config) (httpactivity.Config, error) {
	stored, err := l.store.CreateHTTPActivity(ctx, a)
	if err == nil {
		l.log.Info().Str("activity", a.Name).Msg("http activity registered")
	}
	return stored, err
}

func (l *localActivities) HTTPActivities(ctx context.Context) ([]httpactivity.Config, error) {
	return l.store.HTTPActivities(ctx)
}

func (l *localActivities) HTTPActivity(name string) (httpactivity.Config, bool, error) {
	a, ok := l.store.HTTPActivity(name)
	return a, ok, nil
}

func (l *localActivities) DeleteHTTPActivity(ctx context.Context, name string) error {
	err := l.store.DeleteHTTPActivity(ctx, name)
	if err == nil {
		l.log.Info().Str("activity", name).Msg("http activity deleted")
	}
	return err
}

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
	"github.com/harvestd/harvest/internal/webhookstore"
	"github.com/harvestd/harvest/webhook"
)

// startWebhooks opens the webhook receivers: the raft catalog's, or, on
// a node without gossip, its shard database's. A cluster on static
// shards has no place to keep them (the routes answer 404).
func (n *Node) startWebhooks(ctx context.Context) error {
	log := n.logger("webhooks")
	if n.admin != nil {
		li, staleAfter := n.catalogIndex(ctx), n.cfg.Auth.withDefaults().StaleAfter
		n.webhooks = &raftWebhooks{a: n.admin, secure: n.tls != nil, log: log,
			current: func() bool { return li.current(n.admin, time.Now(), staleAfter) }}
		return nil
	}
	if n.cfg.Gossip != nil || len(n.pools) == 0 {
		return nil
	}
	store, err := webhookstore.Load(ctx, n.pools[slices.Min(slices.Collect(maps.Keys(n.pools)))])
	if err != nil {
		return err
	}
	n.webhooks = &localWebhooks{store: store, log: log}
	return nil
}

// raftWebhooks keeps a cluster's receivers in the raft catalog: every
// node verifies deliveries against its own replica (a receiver just
// created or deleted reaches a node when it applies the entry).
type raftWebhooks struct {
	a      *admin.Admin
	secure bool
	log    zerolog.Logger
	// current reports whether this node's catalog is known to be
	// current (leaderIndex, as for tokens).
	current func() bool
}

var _ api.Webhooks = (*raftWebhooks)(nil)

func (r *raftWebhooks) CreateWebhook(ctx context.Context, w webhook.Config) (webhook.Config, error) {
	if err := proposalErr(r.a.Apply(ctx, admin.PutWebhook{Webhook: w}), r.secure); err != nil {
		return webhook.Config{}, err
	}
	r.log.Info().Str("webhook", w.Name).Str("provider", string(w.Provider)).Msg("webhook created")
	return r.a.Catalog().Webhooks[w.Name], nil
}

func (r *raftWebhooks) Webhooks(context.Context) ([]webhook.Config, error) {
	hooks := r.a.Catalog().Webhooks
	out := make([]webhook.Config, 0, len(hooks))
	for _, name := range slices.Sorted(maps.Keys(hooks)) {
		out = append(out, hooks[name])
	}
	return out, nil
}

func (r *raftWebhooks) Webhook(name string) (webhook.Config, bool, error) {
	return lookupWebhook(r.a.Catalog(), name, r.current)
}

// lookupWebhook finds receiver name in cat. A receiver cat lacks while
// it is not known to be current (a restarted node replays its log only
// once the leader's replication reaches it) may exist: that is a 503 to
// retry, never a final 404, which a provider that does not retry (or
// gives up) would take as the end of the delivery.
func lookupWebhook(cat admin.Catalog, name string, current func() bool) (webhook.Config, bool, error) {
	w, ok := cat.Webhooks[name]
	if !ok && !current() {
		return webhook.Config{}, false, fmt.Errorf("webhook %q is not in this node's catalog, which may trail the leader's: %w",
			name, engine.ErrNotRunning)
	}
	return w, ok, nil
}

func (r *raftWebhooks) DeleteWebhook(ctx context.Context, name string) error {
	if err := proposalErr(r.a.Apply(ctx, admin.DeleteWebhook{Name: name}), r.secure); err != nil {
		return err
	}
	r.log.Info().Str("webhook", name).Msg("webhook deleted")
	return nil
}

// localWebhooks keeps the receivers of a node without a raft catalog in
// its shard database.
type localWebhooks struct {
	store *webhookstore.Store
	log   zerolog.Logger
}

var _ api.Webhooks = (*localWebhooks)(nil)

func (l *localWebhooks) CreateWebhook(ctx context.Context, w webhook.Config) (webhook.Config, error) {
	stored, err := l.store.CreateWebhook(ctx, w)
	if err == nil {
		l.log.Info().Str("webhook", w.Name).Str("provider", string(w.Provider)).Msg("webhook created")
	}
	return stored, err
}

func (l *localWebhooks) Webhooks(ctx context.Context) ([]webhook.Config, error) {
	return l.store.Webhooks(ctx)
}

func (l *localWebhooks) Webhook(name string) (webhook.Config, bool, error) {
	return l.store.Webhook(name)
}

func (l *localWebhooks) DeleteWebhook(ctx context.Context, name string) error {
	err := l.store.DeleteWebhook(ctx, name)
	if err == nil {
		l.log.Info().Str("webhook", name).Msg("webhook deleted")
	}
	return err
}

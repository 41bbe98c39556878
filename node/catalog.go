package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/harvestd/harvest/admin"
	"github.com/harvestd/harvest/api"
	"github.com/harvestd/harvest/engine"
	"github.com/harvestd/harvest/membership"
	"github.com/harvestd/harvest/ring"
)

// Defaults of RaftConfig.
const (
	// DrainCheckIntervalDefault is how often the leader checks whether a
	// draining shard has nothing left inside the window.
	DrainCheckIntervalDefault = 10 * time.Second
	// healthTimeout bounds a shard health check.
	healthTimeout = 5 * time.Second
)

// RaftConfig enables the raft shard catalog (it needs Gossip). The catalog
// replaces Config.Shards, which seed it when the cluster bootstraps.
type RaftConfig struct {
	// BindAddr is the raft TCP host:port (port 0: a free port).
	BindAddr string
	// AdvertiseAddr is the raft address peers dial (default: bound).
	AdvertiseAddr string
	// BootstrapExpect bootstraps the raft group once that many servers
	// are alive in gossip (0: join an existing cluster).
	BootstrapExpect int
	// MaxVoters caps raft voters (3 or 5); later joiners are non-voters.
	MaxVoters int
	// DrainCheckInterval: default DrainCheckIntervalDefault.
	DrainCheckInterval time.Duration
	// Raft overrides hashicorp/raft's timings (tests shrink them).
	Raft *raft.Config
}

// raftPlacement places by the raft catalog.
type raftPlacement struct{ a *admin.Admin }

func (p raftPlacement) Current() ring.Catalog { return p.a.Catalog().Current() }
func (p raftPlacement) Epochs(now time.Time) (uint64, []ring.Catalog) {
	cat := p.a.Catalog()
	cur, ok := cat.CurrentEpoch()
	if !ok {
		return 0, nil
	}
	return cur.Number, cat.WithinWindow(now)
}

// engineWindow is the idempotency window source of the node's engines:
// the raft catalog's (0 until it is loaded: engines wait for it), or nil
// without a raft catalog (the flag's).
func (n *Node) engineWindow() func() time.Duration {
	if n.admin == nil {
		return nil
	}
	return func() time.Duration {
		cat := n.admin.Catalog()
		if cat.Empty() {
			return 0
		}
		return cat.Settings.Window()
	}
}

// startAdmin creates the raft catalog (before gossip, whose metadata
// carries its address).
func (n *Node) startAdmin() error {
	rc := n.cfg.Raft
	a, err := admin.New(admin.Config{
		NodeID: n.nodeID, DataDir: n.cfg.DataDir, BindAddr: rc.BindAddr, AdvertiseAddr: rc.AdvertiseAddr,
		BootstrapExpect: rc.BootstrapExpect, MaxVoters: rc.MaxVoters, InitialShards: n.cfg.Shards,
		Settings: admin.Settings{IdempotencyWindow: n.cfg.IdempotencyWindow}, Raft: rc.Raft,
		ClusterKey: n.cfg.ClusterKey, TLS: n.tls, Logger: n.root,
	}, lazyPeers{v: &n.peersRef, changed: n.adminNudge})
	if err != nil {
		return err
	}
	n.admin = a
	return nil
}

// lazyPeers hands gossip to the admin once it exists: raft binds its
// address first, because gossip advertises it.
type lazyPeers struct {
	v       *atomic.Pointer[viewRef]
	changed <-chan struct{} // the admin's own copy of gossip's nudges
}

// viewRef holds the node's view for an atomic pointer.
type viewRef struct{ view }

func (p lazyPeers) Alive() []membership.Member {
	if r := p.v.Load(); r != nil {
		return r.Alive()
	}
	return nil
}

func (p lazyPeers) Members() []membership.Member {
	if r := p.v.Load(); r != nil {
		return r.Members()
	}
	return nil
}

// Changed is the admin's own channel: gossip's single nudge channel is
// fanned out so the admin and the shard manager each see every change.
func (p lazyPeers) Changed() <-chan struct{} { return p.changed }

// syncLoop keeps a pool open for every shard of the catalog and runs the
// leader's drain checks.
func (n *Node) syncLoop(ctx context.Context, done chan struct{}) {
	defer close(done)
	interval := cmp.Or(n.cfg.Raft.DrainCheckInterval, DrainCheckIntervalDefault)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		n.syncPools(ctx)
		n.finishDrains(ctx)
		n.ensureTokens(ctx)
		n.syncSchedules(ctx)
		select {
		case <-ctx.Done():
			return
		case <-n.admin.Changed():
		case <-tick.C:
		}
	}
}

// syncPools opens (and migrates) the database of every catalog shard that
// has no pool yet and hands the set to the shard manager.
func (n *Node) syncPools(ctx context.Context) {
	cat := n.admin.Catalog()
	added := false
	for id, sh := range cat.Shards {
		n.poolsMu.Lock()
		_, have := n.pools[id]
		n.poolsMu.Unlock()
		if have {
			continue
		}
		pool, err := openPool(ctx, sh.DSN)
		if err != nil {
			n.log.Warn().Uint16("shard_id", id).Err(err).Msg("shard database not reachable")
			continue
		}
		n.poolsMu.Lock()
		n.pools[id] = pool
		n.poolsMu.Unlock()
		added = true
	}
	if added {
		n.mgr.SetPools(n.poolSnapshot())
	}
}

func (n *Node) poolSnapshot() map[uint16]*pgxpool.Pool {
	n.poolsMu.Lock()
	defer n.poolsMu.Unlock()
	out := make(map[uint16]*pgxpool.Pool, len(n.pools))
	for id, p := range n.pools {
		out[id] = p
	}
	return out
}

func (n *Node) pool(id uint16) (*pgxpool.Pool, bool) {
	n.poolsMu.Lock()
	defer n.poolsMu.Unlock()
	p, ok := n.pools[id]
	return p, ok
}

// finishDrains (leader only) moves draining shards to read_only once
// nothing placed on them is inside the window any more.
func (n *Node) finishDrains(ctx context.Context) {
	if id, _ := n.admin.Leader(); id != n.nodeID {
		return
	}
	cat := n.admin.Catalog()
	window := cat.Settings.Window()
	for id, sh := range cat.Shards {
		if sh.State != admin.StateDraining || time.Since(sh.StateSince) < window {
			continue
		}
		st, err := n.drainStatus(ctx, id, window)
		if err != nil || (st.WindowPassesAt != nil && st.WindowPassesAt.After(st.Now)) {
			continue
		}
		cmdCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = n.admin.Apply(cmdCtx, admin.SetShardState{ID: id, State: admin.StateReadOnly})
		cancel()
		if err != nil {
			n.log.Warn().Uint16("shard_id", id).Err(err).Msg("finish drain failed")
			continue
		}
		n.log.Info().Uint16("shard_id", id).Msg("shard drained to read_only")
	}
}

func (n *Node) drainStatus(ctx context.Context, id uint16, window time.Duration) (engine.DrainStatus, error) {
	pool, ok := n.pool(id)
	if !ok {
		return engine.DrainStatus{}, fmt.Errorf("shard %d: no database connection", id)
	}
	ctx, cancel := context.WithTimeout(ctx, healthTimeout)
	defer cancel()
	return engine.ReadDrainStatus(ctx, pool, id, window)
}

// catalogAdmin implements api.Admin over the raft catalog.
type catalogAdmin struct{ n *Node }

var _ api.Admin = catalogAdmin{}

// secure reports whether the nodes' APIs are https.
func (c catalogAdmin) secure() bool { return c.n != nil && c.n.tls != nil }

func (c catalogAdmin) leaderErr(err error) error {
	switch {
	case errors.Is(err, admin.ErrUnknownShard):
		return fmt.Errorf("%w: %v", api.ErrUnknownShard, err)
	case errors.Is(err, admin.ErrUnknownPeer):
		return fmt.Errorf("%w: %v", api.ErrUnknownPeer, err)
	case errors.Is(err, admin.ErrInvalidTransition), errors.Is(err, admin.ErrShardExists):
		return fmt.Errorf("%w: %v", api.ErrInvalidTransition, err)
	case errors.Is(err, admin.ErrRemoveLeader):
		return fmt.Errorf("%w: %v", api.ErrPeerIsLeader, err)
	}
	return proposalErr(err, c.secure())
}

// proposalErr maps what a raft proposal (admin.Apply) answered for the
// API: a follower's refusal sends the write to the leader's API
// (*api.LeaderError), an outcome it cannot know is api.ErrOutcomeUnknown;
// any other error is returned as it is.
func proposalErr(err error, secure bool) error {
	var nl *admin.NotLeaderError
	switch {
	case errors.As(err, &nl):
		return leaderError(nl, secure)
	case errors.Is(err, admin.ErrOutcomeUnknown):
		return fmt.Errorf("%w: %v", api.ErrOutcomeUnknown, err)
	}
	return err
}

// leaderError sends a write refused by a follower to the leader's API.
func leaderError(nl *admin.NotLeaderError, secure bool) *api.LeaderError {
	le := &api.LeaderError{LeaderID: nl.LeaderID}
	if nl.LeaderAPIAddr != "" {
		le.URL = apiURL(secure, nl.LeaderAPIAddr)
	}
	return le
}

// requireLeader sends a write to the leader before its checks run here.
func (c catalogAdmin) requireLeader() error {
	id, addr := c.n.admin.Leader()
	if id == c.n.nodeID {
		return nil
	}
	le := &api.LeaderError{LeaderID: id}
	if addr != "" {
		le.URL = apiURL(c.secure(), addr)
	}
	return le
}

func (c catalogAdmin) view(ctx context.Context, sh admin.Shard, window time.Duration) api.ShardView {
	v := api.ShardView{ShardID: sh.ID, State: string(sh.State), Database: redactDSN(sh.DSN), AddedAt: sh.AddedAt, StateSince: sh.StateSince}
	if t, err := c.n.router.ForShard(sh.ID); err == nil {
		v.Owner = t.Owner
		if t.Shard != nil {
			v.Owner = c.n.nodeID
		}
	}
	st, err := c.n.drainStatus(ctx, sh.ID, window)
	if err != nil {
		v.Error = err.Error()
		return v
	}
	v.Reachable, v.Status = true, &st
	return v
}

func (c catalogAdmin) Catalog(ctx context.Context) (api.CatalogView, error) {
	cat := c.n.admin.Catalog()
	window := cat.Settings.Window()
	out := api.CatalogView{IdempotencyWindow: window.String(), Shards: []api.ShardView{}}
	out.Leader, _ = c.n.admin.Leader()
	for _, id := range slices.Sorted(maps.Keys(cat.Shards)) {
		out.Shards = append(out.Shards, c.view(ctx, cat.Shards[id], window))
	}
	for _, e := range cat.Epochs {
		out.Epochs = append(out.Epochs, api.EpochView{Number: e.Number, Since: e.Since, Readable: e.Readable, Writable: e.Writable})
	}
	return out, nil
}

func (c catalogAdmin) Shard(ctx context.Context, id uint16) (api.ShardView, error) {
	cat := c.n.admin.Catalog()
	sh, ok := cat.Shard(id)
	if !ok {
		return api.ShardView{}, fmt.Errorf("shard %d: %w", id, api.ErrUnknownShard)
	}
	return c.view(ctx, sh, cat.Settings.Window()), nil
}

// AddShard health-checks and migrates the database, adds it readable,
// then opens it for placement.
func (c catalogAdmin) AddShard(ctx context.Context, id uint16, dsn string) (api.ShardView, error) {
	if _, ok := c.n.admin.Catalog().Shard(id); ok {
		return api.ShardView{}, fmt.Errorf("shard %d: %w", id, api.ErrInvalidTransition)
	}
	if err := c.requireLeader(); err != nil {
		return api.ShardView{}, err // the leader health-checks and adds it
	}
	if _, err := pgxpool.ParseConfig(dsn); err != nil {
		return api.ShardView{}, fmt.Errorf("dsn is not a PostgreSQL connection string: %w", engine.ErrInvalidArgument)
	}
	hctx, cancel := context.WithTimeout(ctx, healthTimeout)
	pool, err := openPool(hctx, dsn)
	cancel()
	if err != nil {
		return api.ShardView{}, shardUnreachable(c.n.log, id, dsn, err)
	}
	pool.Close()
	if err := c.n.admin.Apply(ctx, admin.AddShard{ID: id, DSN: dsn}); err != nil {
		return api.ShardView{}, c.leaderErr(err)
	}
	if err := c.n.admin.Apply(ctx, admin.SetShardState{ID: id, State: admin.StateWritable}); err != nil {
		return api.ShardView{}, c.leaderErr(err)
	}
	c.n.syncPools(ctx)
	return c.Shard(ctx, id)
}

// Drain stops new placement on a shard. It refuses the last writable shard
// and an unreachable one unless force.
func (c catalogAdmin) Drain(ctx context.Context, id uint16, force bool) (api.DrainView, error) {
	if err := c.requireLeader(); err != nil {
		return api.DrainView{}, err
	}
	// Decide on a catalog with every committed change applied: a freshly
	// elected leader may still be catching up.
	if err := c.n.admin.Barrier(ctx); err != nil {
		return api.DrainView{}, c.leaderErr(err)
	}
	cat := c.n.admin.Catalog()
	sh, ok := cat.Shard(id)
	if !ok {
		return api.DrainView{}, fmt.Errorf("shard %d: %w", id, api.ErrUnknownShard)
	}
	if sh.State != admin.StateWritable {
		return api.DrainView{}, fmt.Errorf("%w: shard %d is %s, only a writable shard can be drained", api.ErrInvalidTransition, id, sh.State)
	}
	var risks []string
	if writable := cat.Current().Writable; len(writable) == 1 && writable[0] == id {
		risks = append(risks, fmt.Sprintf("shard %d is the last writable shard: new starts would have nowhere to go", id))
	}
	if _, err := c.n.drainStatus(ctx, id, cat.Settings.Window()); err != nil {
		risks = append(risks, fmt.Sprintf("shard %d is unreachable (%v): retries of keys placed on it cannot be checked until it is back", id, err))
	}
	out := api.DrainView{}
	if len(risks) > 0 {
		if !force {
			return out, fmt.Errorf("%w: %s (use --force to drain anyway)", api.ErrUnsafeDrain, joinRisks(risks))
		}
		out.Forced, out.Risk = true, joinRisks(risks)
	}
	if err := c.n.admin.Apply(ctx, admin.SetShardState{ID: id, State: admin.StateDraining}); err != nil {
		return api.DrainView{}, c.leaderErr(err)
	}
	v, err := c.Shard(ctx, id)
	out.Shard = v
	return out, err
}

func (c catalogAdmin) Undrain(ctx context.Context, id uint16) (api.ShardView, error) {
	if err := c.n.admin.Apply(ctx, admin.SetShardState{ID: id, State: admin.StateWritable}); err != nil {
		return api.ShardView{}, c.leaderErr(err)
	}
	return c.Shard(ctx, id)
}

func (c catalogAdmin) Peers(context.Context) ([]api.PeerView, error) {
	servers, err := c.n.admin.Servers()
	if err != nil {
		return nil, err
	}
	out := []api.PeerView{}
	for _, s := range servers {
		out = append(out, api.PeerView{ID: s.ID, Addr: s.Addr, Voter: s.Voter, Leader: s.Leader})
	}
	return out, nil
}

func (c catalogAdmin) CatalogIndex(context.Context) (uint64, bool, error) {
	return c.n.admin.Catalog().Index, c.n.admin.IsLeader(), nil
}

func (c catalogAdmin) RemovePeer(ctx context.Context, id string) error {
	return c.leaderErr(c.n.admin.RemovePeer(ctx, id))
}

func joinRisks(r []string) string {
	out := r[0]
	for _, s := range r[1:] {
		out += "; " + s
	}
	return out
}

// shardUnreachable logs why a shard database to add could not be used and
// returns an error that does not say: a caller's dial errors would make
// the admin route an oracle for probing hosts and ports. The log line
// names the DSN without its password.
func shardUnreachable(log zerolog.Logger, id uint16, dsn string, err error) error {
	detail := err.Error()
	if cfg, perr := pgxpool.ParseConfig(dsn); perr == nil && cfg.ConnConfig.Password != "" {
		detail = strings.ReplaceAll(detail, cfg.ConnConfig.Password, "xxxxx")
	}
	log.Warn().Uint16("shard_id", id).Str("database", redactDSN(dsn)).Str("error", detail).
		Msg("shard database to add is unreachable or refused")
	return fmt.Errorf("shard %d: %w", id, api.ErrShardUnreachable)
}

// redactDSN hides the password of a DSN (URL or keyword form).
func redactDSN(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
		return u.String()
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return "(unparsable dsn)"
	}
	return fmt.Sprintf("host=%s port=%d dbname=%s user=%s", cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database, cfg.ConnConfig.User)
}

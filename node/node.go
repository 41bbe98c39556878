package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/admin"
	"github.com/harvestd/harvest/api"
	"github.com/harvestd/harvest/engine"
	"github.com/harvestd/harvest/internal/pgserver"
	"github.com/harvestd/harvest/internal/shardmgr"
	"github.com/harvestd/harvest/internal/tlsconf"
	"github.com/harvestd/harvest/membership"
)

// Node is one harvestd process. Create it with New, then Start it once;
// Stop takes it down. Its methods are safe for concurrent use.
type Node struct {
	cfg Config
	reg *harvest.Registry

	// outbound performs the shards' outbox operations through this
	// node's API (bound once the API is built, see serve).
	outbound api.Outbound

	mu      sync.Mutex
	started bool
	nodeID  string
	root    zerolog.Logger // cfg.Logger with node_id
	log     zerolog.Logger // component node
	pg      *pgserver.Server
	poolsMu sync.Mutex
	pools   map[uint16]*pgxpool.Pool
	admin   *admin.Admin // nil on static shards
	tokens  tokenBackend // nil with authentication off
	// webhooks keeps the webhook receivers; nil on static shards with gossip.
	webhooks api.Webhooks
	// activities keeps the HTTP activities registered at run time; nil on
	// static shards with gossip.
	activities httpActivities
	// flowLimits keeps the flow control limits set at run time; nil on
	// static shards with gossip.
	flowLimits flowLimits
	// catIndex is the raft leader's catalog index as last learned (nil
	// without a raft catalog, see catalogIndex); indexEnd stops, and
	// indexOut reports the end of, the loop that learns it.
	catIndex *leaderIndex
	indexEnd context.CancelFunc
	indexOut chan struct{}
	router   *router
	syncEnd  context.CancelFunc
	syncOut  chan struct{}
	gossip   *membership.Membership // nil when standalone
	// gossipRef publishes gossip (key rotation), peersRef the view of it
	// (certView's with TLS) to the raft catalog, which starts first.
	gossipRef atomic.Pointer[membership.Membership]
	peersRef  atomic.Pointer[viewRef]
	certView  *certView // with TLS: members count once their certificate verified
	// schedSynced: the schedule definitions syncLoop copied into the
	// schedules shard (syncLoop's goroutine only).
	schedSynced map[string]engine.ScheduleDef
	// adminNudge and shardNudge get a copy of every gossip change each.
	adminNudge chan struct{}
	shardNudge chan struct{}
	fanEnd     context.CancelFunc
	view       view
	mgr        *shardmgr.Manager
	http       *http.Server
	tls        *tlsconf.Material // nil: plain HTTP and raft
	client     *http.Client      // this node's own requests to others over TLS; nil: http.DefaultClient
	// api is the HTTP API once served; httpKey signs this node's own
	// node requests (both replaced by RotateClusterKey).
	api     atomic.Pointer[api.Server]
	httpKey atomic.Pointer[[]byte]
	ln      net.Listener
	serving chan struct{} // closed when the serve goroutine returns
	errc    chan error    // receives a serve failure, at most one
}

// New checks cfg and returns a stopped node that runs the workflows and
// activities of reg.
func New(cfg Config, reg *harvest.Registry) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if reg == nil {
		return nil, errors.New("node: registry is required")
	}
	cfg = cfg.withDefaults()
	n := &Node{cfg: cfg, reg: reg, root: cfg.Logger, errc: make(chan error, 1),
		adminNudge: make(chan struct{}, 1), shardNudge: make(chan struct{}, 1)}
	if cfg.TLS != nil {
		m, err := tlsconf.Load(*cfg.TLS)
		if err != nil {
			return nil, err
		}
		n.tls, n.client = m, newNodeClient(m.Client())
	}
	return n, nil
}

// Start brings the node up (see the package doc for the order) and returns
// once the HTTP API is serving. ctx bounds start-up only; the node runs
// until Stop. On failure Start undoes what it brought up and returns the
// error. Errors about the data directory wrap ErrDataDir; missing
// PostgreSQL binaries for the managed server wrap ErrNoPostgresBinaries.
func (n *Node) Start(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.started {
		return errors.New("node already started")
	}
	n.started = true
	if err := n.start(ctx); err != nil {
		if stopErr := n.shutdown(context.WithoutCancel(ctx)); stopErr != nil {
			n.log.Warn().Err(stopErr).Msg("cleanup after failed start incomplete")
		}
		return err
	}
	n.log.Info().Str("http_addr", n.ln.Addr().String()).Any("shards", n.mgr.Owned()).Msg("node started")
	return nil
}

func (n *Node) start(ctx context.Context) error {
	if err := n.identify(); err != nil {
		return err
	}
	dsns, err := n.shardDSNs(ctx)
	if err != nil {
		return err
	}
	if err := n.openPools(ctx, dsns); err != nil {
		return err
	}
	if err := n.listen(); err != nil {
		return err
	}
	if n.cfg.Raft != nil {
		if err := n.startAdmin(); err != nil {
			return err
		}
		if err := n.admin.Start(ctx); err != nil {
			return fmt.Errorf("start raft catalog: %w", err)
		}
	}
	if err := n.startTokens(ctx); err != nil {
		return err
	}
	if err := n.startWebhooks(ctx); err != nil {
		return err
	}
	if err := n.startHTTPActivities(ctx); err != nil {
		return err
	}
	if err := n.startFlowLimits(ctx); err != nil {
		return err
	}
	if err := n.joinCluster(ctx); err != nil {
		return err
	}
	if err := n.startShards(ctx); err != nil {
		return err
	}
	n.router = &router{secure: n.tls != nil, self: n.nodeID, src: staticPlacement{n.catalog()}, mgr: n.mgr, view: n.view, tokensReady: n.tokensReady()}
	if n.admin != nil {
		n.router.src, n.router.lagging = raftPlacement{n.admin}, true
		syncCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		n.syncEnd, n.syncOut = cancel, make(chan struct{})
		go n.syncLoop(syncCtx, n.syncOut)
	}
	return n.serve()
}

// shardDSNs is the catalog: Config.Shards, or one shard on PostgresDSN or
// on the managed server. A node joining a raft catalog may have none yet.
func (n *Node) shardDSNs(ctx context.Context) (map[uint16]string, error) {
	if len(n.cfg.Shards) > 0 || n.cfg.Raft != nil {
		return n.cfg.Shards, nil
	}
	dsn := n.cfg.PostgresDSN
	if dsn == "" {
		srv, managedDSN, err := n.startManagedPostgres(ctx)
		n.pg = srv
		if err != nil {
			return nil, err
		}
		dsn = managedDSN
	}
	return map[uint16]string{n.cfg.ShardID: dsn}, nil
}

func (n *Node) openPools(ctx context.Context, dsns map[uint16]string) error {
	n.pools = map[uint16]*pgxpool.Pool{}
	for id, dsn := range dsns {
		pool, err := openPool(ctx, dsn)
		if err != nil {
			return fmt.Errorf("shard %d: %w", id, err)
		}
		n.pools[id] = pool
	}
	return nil
}

// joinCluster starts gossip (or the standalone view) advertising the API.
func (n *Node) joinCluster(ctx context.Context) error {
	apiAddr := cmp.Or(n.cfg.AdvertiseHTTP, n.ln.Addr().String())
	if n.cfg.Gossip == nil {
		n.view = newStandalone(n.nodeID, apiAddr)
		return nil
	}
	gcfg := *n.cfg.Gossip
	gcfg.NodeID = n.nodeID
	gcfg.Meta.NodeID, gcfg.Meta.APIAddr, gcfg.Meta.ClientAddr = n.nodeID, apiAddr, n.cfg.AdvertiseClient
	if n.admin != nil {
		gcfg.Meta.RaftAddr = n.admin.Addr()
	}
	gcfg.Meta.Version = cmp.Or(gcfg.Meta.Version, Version)
	gcfg.ClusterKey = n.cfg.ClusterKey
	gcfg.Logger = n.root
	m, err := membership.New(gcfg)
	if err != nil {
		return err
	}
	if err := m.Start(ctx); err != nil {
		return fmt.Errorf("start gossip: %w", err)
	}
	n.gossip, n.view = m, m
	n.gossipRef.Store(m)
	if n.tls != nil {
		cv := newCertView(m, n.nodeID, n.tls.Client(), n.logger("membership"))
		cv.Start(context.WithoutCancel(ctx))
		n.certView, n.view = cv, cv
	}
	n.peersRef.Store(&viewRef{n.view})
	fanCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	n.fanEnd = cancel
	go fanOut(fanCtx, n.view.Changed(), n.adminNudge, n.shardNudge)
	return nil
}

func (n *Node) startShards(ctx context.Context) error {
	mgr, err := shardmgr.New(shardmgr.Config{
		NodeID:   n.nodeID,
		Pools:    n.pools,
		Registry: n.reg,
		Engine: engine.Config{
			IdempotencyWindow: n.cfg.IdempotencyWindow,
			PollInterval:      n.cfg.PollInterval,
			LeaseTTL:          n.cfg.LeaseTTL,
			ActivityWorkers:   n.cfg.ActivityWorkers,
			StateCacheEntries: n.cfg.StateCacheEntries,
			StateCacheBytes:   n.cfg.StateCacheBytes,
			CallbackPolicy:    engine.CallbackPolicy{Allow: n.cfg.CallbackAllowCIDRs},
			Outbound:          n.engineOutbound(),
			HTTPActivities:    n.engineActivities(),
			Limits:            n.engineLimits(),
		},
		Window: n.engineWindow(),
		Logger: n.root,
	}, members{v: n.view, changed: n.shardNudge})
	if err != nil {
		return err
	}
	n.mgr = mgr
	return mgr.Start(ctx)
}

// engineOutbound is the Outbound the shard engines perform their outbox
// through: the node's own API.
func (n *Node) engineOutbound() engine.Outbound {
	if n.cfg.wrapOutbound != nil {
		return n.cfg.wrapOutbound(&n.outbound)
	}
	return &n.outbound
}

// Owned lists the shards this node serves right now.
func (n *Node) Owned() []uint16 {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.mgr == nil {
		return nil
	}
	return n.mgr.Owned()
}

// identify prepares the data directory and resolves the node id, then
// derives the loggers that carry it.
func (n *Node) identify() error {
	if err := prepareDataDir(n.cfg.DataDir); err != nil {
		return err
	}
	n.nodeID = n.cfg.NodeID
	if n.nodeID == "" {
		id, err := loadNodeID(n.cfg.DataDir)
		if err != nil {
			return err
		}
		n.nodeID = id
	}
	n.root = n.cfg.Logger.With().Str("node_id", n.nodeID).Logger()
	n.log = n.logger("node").With().Uint16("shard_id", n.cfg.ShardID).Logger()
	return nil
}

// logger is the child of the root logger for one component.
func (n *Node) logger(component string) zerolog.Logger {
	return n.root.With().Str("component", component).Logger()
}

// NodeID is the node id in use; empty before Start.
func (n *Node) NodeID() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.nodeID
}

// Addr is the address the HTTP API listens on (the actual port when
// Config.HTTPAddr asked for port 0); empty unless started.
func (n *Node) Addr() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ln == nil {
		return ""
	}
	return n.ln.Addr().String()
}

// Err delivers the error that stopped the HTTP server on its own (its
// listener failed) while the node was running. Nothing is sent when Stop
// shuts the server down. The caller should Stop the node after a receive.
func (n *Node) Err() <-chan error { return n.errc }

// Stop shuts the node down in reverse start order: the HTTP server drains
// in-flight requests (until ctx is done, then their connections are
// closed), the engine stops and releases the shard lease, the pool closes
// and the managed PostgreSQL server stops. Every step runs even if an
// earlier one fails; the errors are joined. Stop is safe before Start,
// after a failed Start and more than once.
func (n *Node) Stop(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.shutdown(ctx)
}

// shutdown tears down whatever is up and forgets it; n.mu is held.
func (n *Node) shutdown(ctx context.Context) error {
	var errs []error
	if n.http != nil {
		errs = append(errs, n.stopHTTP(ctx))
		n.http = nil
	}
	if n.ln != nil {
		_ = n.ln.Close()
		n.ln = nil
	}
	n.stopCluster(true)
	if n.pg != nil {
		if err := n.pg.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("stop managed postgres: %w", err))
		}
		n.pg = nil
	}
	return errors.Join(errs...)
}

// GossipAddr is the address this node gossips on; empty when standalone.
func (n *Node) GossipAddr() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.gossip == nil {
		return ""
	}
	return n.gossip.Local().GossipAddr
}

// crash takes the node down the way a killed process goes: no graceful
// leave, no lease release. For tests.
func (n *Node) crash() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.http != nil {
		_ = n.http.Close()
		<-n.serving
		n.http, n.ln = nil, nil
	}
	n.stopCluster(false)
}

// stopCluster stops the catalog sync, the shard engines, raft, gossip and
// the pools. Graceful: engines release their leases before gossip
// announces the leave and raft hands leadership over; otherwise as a crash
// would: leases kept, no leave, no hand-over. n.mu is held.
func (n *Node) stopCluster(graceful bool) {
	if n.indexEnd != nil {
		n.indexEnd()
		<-n.indexOut
		n.indexEnd = nil
	}
	if n.syncEnd != nil {
		n.syncEnd()
		<-n.syncOut
		n.syncEnd = nil
	}
	if n.mgr != nil {
		if graceful {
			n.mgr.Stop() // releases every lease before the leave is announced
			n.log.Info().Msg("shard engines stopped")
		} else {
			n.mgr.Abandon()
		}
		n.mgr = nil
	}
	if n.admin != nil {
		if graceful {
			n.admin.Stop()
		} else {
			n.admin.Abandon()
		}
		n.admin = nil
	}
	if n.certView != nil {
		n.certView.Stop()
		n.certView = nil
	}
	if n.gossip != nil {
		if graceful {
			n.gossip.Stop()
		} else {
			n.gossip.Shutdown()
		}
		n.gossip = nil
	}
	if n.fanEnd != nil {
		n.fanEnd()
		n.fanEnd = nil
	}
	for id, pool := range n.pools {
		pool.Close()
		delete(n.pools, id)
	}
}

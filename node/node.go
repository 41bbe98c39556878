package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine"
	"github.com/harvestd/harvest/internal/pgserver"
)

// Node is one harvestd process. Create it with New, then Start it once;
// Stop takes it down. Its methods are safe for concurrent use.
type Node struct {
	cfg Config
	reg *harvest.Registry

	mu      sync.Mutex
	started bool
	nodeID  string
	root    zerolog.Logger // cfg.Logger with node_id
	log     zerolog.Logger // component node
	pg      *pgserver.Server
	pool    *pgxpool.Pool
	engine  *engine.Engine
	http    *http.Server
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
	return &Node{cfg: cfg, reg: reg, root: cfg.Logger, errc: make(chan error, 1)}, nil
}

// Start brings the node up (see the package doc for the order) and returns
// once the HTTP API is serving. ctx bounds start-up only; the node runs
// until Stop. On failure Start undoes what it brought up and returns the
// error. Errors about the data directory wrap ErrDataDir; missing
// PostgreSQL binaries wrap pgserver.ErrNoBinaries.
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
	n.log.Info().Str("http_addr", n.ln.Addr().String()).Int64("epoch", n.engine.Epoch()).Msg("node started")
	return nil
}

func (n *Node) start(ctx context.Context) error {
	if err := n.identify(); err != nil {
		return err
	}
	dsn := n.cfg.PostgresDSN
	if dsn == "" {
		srv, managedDSN, err := n.startManagedPostgres(ctx)
		n.pg = srv
		if err != nil {
			return err
		}
		dsn = managedDSN
	}
	pool, err := openPool(ctx, dsn)
	if err != nil {
		return err
	}
	n.pool = pool
	if err := n.startEngine(ctx); err != nil {
		return err
	}
	return n.serve()
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

func (n *Node) startEngine(ctx context.Context) error {
	// The engine adds its own component and shard_id fields.
	e, err := engine.New(n.pool, n.reg, engine.Config{
		ShardID:           n.cfg.ShardID,
		NodeID:            n.nodeID,
		IdempotencyWindow: n.cfg.IdempotencyWindow,
		Logger:            n.root,
	})
	if err != nil {
		return err
	}
	if err := e.Start(ctx); err != nil {
		return fmt.Errorf("start engine: %w", err)
	}
	n.engine = e
	return nil
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
		n.http, n.ln = nil, nil
	}
	if n.engine != nil {
		n.engine.Stop()
		n.engine = nil
		n.log.Info().Msg("engine stopped")
	}
	if n.pool != nil {
		n.pool.Close()
		n.pool = nil
	}
	if n.pg != nil {
		if err := n.pg.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("stop managed postgres: %w", err))
		}
		n.pg = nil
	}
	return errors.Join(errs...)
}

// Package shardmgr runs the shard engines a node owns. Ownership is the
// ring's: OwnerOf(shard, alive nodes). The manager reconciles on every
// membership nudge and on a ticker: it starts an engine (taking the shard's
// fencing lease) for every shard the ring gives this node, and stops
// (releasing the lease) every engine whose shard the ring gives away.
//
// A lease held by a node that is not alive in this node's view is taken
// over at once (epoch + 1): fencing keeps that safe even when the view is
// wrong, because the old holder can no longer commit. A lease held by a
// node this view thinks alive is retried every RetryInterval until that
// node hands it over.
package shardmgr

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine"
	"github.com/harvestd/harvest/ring"
)

// Defaults of Config.
const (
	// ReconcileIntervalDefault is the backstop reconcile period.
	ReconcileIntervalDefault = time.Second
	// RetryIntervalDefault is the retry period while a wanted lease is
	// still held by a node this view thinks alive.
	RetryIntervalDefault = 250 * time.Millisecond
)

// Members is the membership view the manager needs.
type Members interface {
	// AliveIDs lists the node ids currently alive (this node included).
	AliveIDs() []string
	// Gone reports a node known to be dead or left. Only such a holder's
	// lease is taken over before it expires; an unknown holder is not gone.
	Gone(nodeID string) bool
	// Changed is nudged whenever membership changes.
	Changed() <-chan struct{}
}

// Config configures a Manager. Zero durations take the defaults above.
type Config struct {
	// NodeID is this node.
	NodeID string
	// Pools maps every shard of the catalog to its database (SetPools
	// replaces it later).
	Pools map[uint16]*pgxpool.Pool
	// Registry holds the workflows and activities engines run.
	Registry *harvest.Registry
	// Engine is the template of every engine's config (ShardID, NodeID
	// and TakeOver are set per shard).
	Engine engine.Config
	// Window, when set, gives the idempotency window of each engine
	// started from then on, overriding Engine.IdempotencyWindow: the raft
	// catalog's, so that every owner of every shard deduplicates over the
	// same window. While it returns 0 (the catalog is not loaded yet) no
	// engine starts.
	Window            func() time.Duration
	ReconcileInterval time.Duration
	RetryInterval     time.Duration
	Logger            zerolog.Logger
}

// Validate reports a missing node id or registry.
func (c Config) Validate() error {
	if c.NodeID == "" || c.Registry == nil {
		return errors.New("shardmgr config: node id and registry are required")
	}
	return nil
}

// errNoWindow: Config.Window has no window yet (the catalog is loading).
var errNoWindow = errors.New("no idempotency window yet")

// Manager owns the engines of one node.
type Manager struct {
	cfg     Config
	members Members
	log     zerolog.Logger

	mu      sync.Mutex
	engines map[uint16]*engine.Engine
	pools   map[uint16]*pgxpool.Pool

	cancel context.CancelFunc
	done   chan struct{}
	kick   chan struct{}
}

// New returns a stopped manager.
func New(cfg Config, members Members) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.ReconcileInterval = cmp.Or(cfg.ReconcileInterval, ReconcileIntervalDefault)
	cfg.RetryInterval = cmp.Or(cfg.RetryInterval, RetryIntervalDefault)
	return &Manager{
		cfg: cfg, members: members, engines: map[uint16]*engine.Engine{}, pools: maps.Clone(cfg.Pools),
		log:  cfg.Logger.With().Str("component", "shards").Logger(),
		kick: make(chan struct{}, 1),
	}, nil
}

// Start reconciles once (taking the leases that are free) and then keeps
// reconciling in the background until Stop.
func (m *Manager) Start(ctx context.Context) error {
	m.reconcile(ctx)
	loopCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	m.cancel = cancel
	m.done = make(chan struct{})
	go m.loop(loopCtx)
	return nil
}

// Stop ends the loop and stops every engine, releasing their leases so
// successors can start at once.
func (m *Manager) Stop() {
	if m.cancel != nil {
		m.cancel()
		<-m.done
		m.cancel = nil
	}
	m.mu.Lock()
	engines := m.engines
	m.engines = map[uint16]*engine.Engine{}
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, e := range engines {
		wg.Go(e.Stop)
	}
	wg.Wait()
}

// Abandon ends the loop and stops every engine without releasing its
// lease, as a crash would. For fault drills and tests.
func (m *Manager) Abandon() {
	if m.cancel != nil {
		m.cancel()
		<-m.done
		m.cancel = nil
	}
	// As in Stop, the engines halt outside the lock: a loop that is
	// routing a request of its own (an outbox row served in process)
	// asks Engine for a shard, and halting waits for that loop.
	m.mu.Lock()
	engines := m.engines
	m.engines = map[uint16]*engine.Engine{}
	m.mu.Unlock()
	for _, e := range engines {
		e.Abandon()
	}
}

// Kick asks for a reconcile now.
func (m *Manager) Kick() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// Engine is the engine of shard if this node serves it right now.
func (m *Manager) Engine(shard uint16) (*engine.Engine, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.engines[shard]
	if !ok || !e.Owning() {
		return nil, false
	}
	return e, true
}

// Owned lists the shards this node serves, sorted.
func (m *Manager) Owned() []uint16 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []uint16
	for s, e := range m.engines {
		if e.Owning() {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// Shards lists every shard of the catalog, sorted.
func (m *Manager) Shards() []uint16 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.pools))
}

// SetPools replaces the catalog's shard databases (a shard was added) and
// reconciles soon. Engines of shards that disappeared are stopped.
func (m *Manager) SetPools(pools map[uint16]*pgxpool.Pool) {
	m.mu.Lock()
	m.pools = maps.Clone(pools)
	m.mu.Unlock()
	m.Kick()
}

func (m *Manager) pool(shard uint16) (*pgxpool.Pool, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.pools[shard]
	return p, ok
}

// Wanted lists the shards the ring gives this node under the current view.
func (m *Manager) Wanted() []uint16 {
	alive := m.aliveIDs()
	var out []uint16
	for _, s := range m.Shards() {
		if owner, _ := ring.OwnerOf(s, alive); owner == m.cfg.NodeID {
			out = append(out, s)
		}
	}
	return out
}

func (m *Manager) aliveIDs() []string {
	alive := m.members.AliveIDs()
	if !slices.Contains(alive, m.cfg.NodeID) {
		alive = append(alive, m.cfg.NodeID)
	}
	return alive
}

func (m *Manager) loop(ctx context.Context) {
	defer close(m.done)
	tick := time.NewTicker(m.cfg.ReconcileInterval)
	defer tick.Stop()
	var retry <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.members.Changed():
		case <-m.kick:
		case <-tick.C:
		case <-retry:
		}
		retry = nil
		if m.reconcile(ctx) {
			retry = time.After(m.cfg.RetryInterval)
		}
	}
}

// reconcile makes the running engines match the ring; true means a wanted
// lease is still held elsewhere and a retry is due.
func (m *Manager) reconcile(ctx context.Context) (pending bool) {
	alive := m.aliveIDs()
	shards := m.Shards()
	for _, shard := range shards {
		owner, _ := ring.OwnerOf(shard, alive)
		if m.reconcileShard(ctx, shard, owner == m.cfg.NodeID) {
			pending = true
		}
	}
	m.mu.Lock()
	var gone []uint16
	for s := range m.engines {
		if !slices.Contains(shards, s) {
			gone = append(gone, s)
		}
	}
	m.mu.Unlock()
	for _, s := range gone {
		m.mu.Lock()
		e := m.engines[s]
		m.mu.Unlock()
		m.drop(s, e, false)
	}
	return pending
}

func (m *Manager) reconcileShard(ctx context.Context, shard uint16, mine bool) (pending bool) {
	m.mu.Lock()
	e, running := m.engines[shard]
	m.mu.Unlock()
	if running && (!mine || !e.Owning()) {
		m.drop(shard, e, mine)
		running = false
	}
	if !mine || running {
		return false
	}
	started, err := m.startEngine(ctx, shard)
	if err != nil {
		if errors.Is(err, errNoWindow) {
			m.log.Debug().Uint16("shard_id", shard).Msg("waiting for the catalog's idempotency window")
			return true
		}
		if errors.Is(err, engine.ErrLeaseHeld) {
			m.log.Debug().Uint16("shard_id", shard).Err(err).Msg("wanted shard still leased elsewhere")
			return true
		}
		m.log.Warn().Uint16("shard_id", shard).Err(err).Msg("shard engine start failed")
		return true
	}
	m.mu.Lock()
	m.engines[shard] = started
	m.mu.Unlock()
	m.log.Info().Uint16("shard_id", shard).Int64("epoch", started.Epoch()).Msg("shard owned")
	return false
}

func (m *Manager) drop(shard uint16, e *engine.Engine, stillMine bool) {
	m.mu.Lock()
	delete(m.engines, shard)
	m.mu.Unlock()
	e.Stop()
	if stillMine {
		m.log.Warn().Uint16("shard_id", shard).Msg("shard lease lost")
	} else {
		m.log.Info().Uint16("shard_id", shard).Msg("shard handed over")
	}
}

func (m *Manager) startEngine(ctx context.Context, shard uint16) (*engine.Engine, error) {
	cfg := m.cfg.Engine
	cfg.ShardID, cfg.NodeID = shard, m.cfg.NodeID
	cfg.Logger = m.cfg.Logger
	cfg.TakeOver = m.members.Gone
	if m.cfg.Window != nil {
		if cfg.IdempotencyWindow = m.cfg.Window(); cfg.IdempotencyWindow <= 0 {
			return nil, errNoWindow
		}
	}
	pool, ok := m.pool(shard)
	if !ok {
		return nil, fmt.Errorf("shard %d has no database", shard)
	}
	e, err := engine.New(pool, m.cfg.Registry, cfg)
	if err != nil {
		return nil, err
	}
	if err := e.Start(ctx); err != nil {
		return nil, err
	}
	return e, nil
}

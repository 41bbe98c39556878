package admin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/rs/zerolog"

	"github.com/harvestd/harvest/internal/clusterkey"
	"github.com/harvestd/harvest/membership"
)

const (
	// applyTimeoutDefault bounds Apply, RemovePeer and the leader's own
	// proposals when their ctx has no deadline.
	applyTimeoutDefault = 10 * time.Second
	// transportTimeout is the raft transport's I/O deadline (Consul's).
	transportTimeout = 10 * time.Second
	// transportMaxPool is how many connections per peer the transport
	// keeps.
	transportMaxPool = 3
	// logCacheSize is how many recent log entries raft keeps in memory.
	logCacheSize = 256
	// readyPoll is how often WaitReady checks for a leader and a catalog.
	readyPoll = 20 * time.Millisecond
)

// Peers is the cluster membership the admin reads: gossip's view of which
// nodes are alive and where their raft transport listens.
// *membership.Membership implements it.
type Peers interface {
	// Alive returns the alive members, this node included.
	Alive() []membership.Member
	// Members returns every known member with its state; the leader
	// removes the raft servers of members in membership.StateLeft.
	Members() []membership.Member
	// Changed nudges after membership changes. The admin loop receives
	// from it, so it must be a channel of the admin's own: a nudge taken
	// here is lost to any other reader of the same channel (such as
	// membership.Membership.Changed, which has a single channel). A nil
	// channel is allowed; Config.ReconcileInterval then paces the loop.
	// The loop calls Changed again on every wake.
	Changed() <-chan struct{}
}

// Server is one server of the raft configuration.
type Server struct {
	// ID is the node id.
	ID string
	// Addr is the raft address.
	Addr string
	// Voter is true for voters, false for non-voters.
	Voter bool
	// Leader is true for the leader this node knows of.
	Leader bool
}

// lifecycle of an Admin.
type lifecycle uint8

const (
	idle lifecycle = iota
	running
	stopped
)

// raftNode is what Start creates and Stop tears down.
type raftNode struct {
	raft  *raft.Raft
	trans *raft.NetworkTransport
	store *boltStore
}

// Admin runs this node's member of the raft group that agrees on the
// shard catalog. Create it with New, Start it once and Stop it; its
// methods are safe for concurrent use.
type Admin struct {
	cfg     Config
	peers   Peers
	log     zerolog.Logger
	raftLog hclog.Logger
	fsm     *fsm
	changed chan struct{} // public nudge, buffered(1)
	// raftKeys authenticate the raft transport (Rotate replaces them).
	raftKeys *raftKeys

	node   atomic.Pointer[raftNode] // nil before Start and after Stop
	done   atomic.Bool              // Stop was called
	confMu sync.Mutex               // serialises raft configuration changes

	mu     sync.Mutex // serialises Start and Stop
	state  lifecycle
	cancel context.CancelFunc // ends the loop
	loop   chan struct{}      // closed when the loop returns
}

// New checks cfg and returns a stopped Admin. peers is the gossip
// membership (required).
func New(cfg Config, peers Peers) (*Admin, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if peers == nil {
		return nil, errors.New("admin config: peers are required")
	}
	cfg = cfg.withDefaults()
	a := &Admin{
		cfg:      cfg,
		peers:    peers,
		log:      cfg.Logger.With().Str("component", "admin").Logger(),
		changed:  make(chan struct{}, 1),
		raftKeys: newRaftKeys(cfg.ClusterKey.DeriveAll(clusterkey.LabelRaft)...),
	}
	a.raftLog = newRaftLogger(a.log)
	a.cfg.Raft.Logger = a.raftLog
	a.fsm = newFSM(a.nudge)
	return a, nil
}

// Start opens the raft store in Config.DataDir, binds the raft transport
// and starts raft and the admin loop, then returns: it does not wait for a
// leader (see WaitReady). ctx bounds start-up only. A failed Start may be
// retried.
func (a *Admin) Start(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch a.state {
	case running:
		return ErrAlreadyStarted
	case stopped:
		return ErrStopped
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	rn, hasState, err := a.open()
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	a.state, a.cancel, a.loop = running, cancel, make(chan struct{})
	a.node.Store(rn)
	go a.run(runCtx, rn, hasState)
	a.log.Info().Str("raft_addr", string(rn.trans.LocalAddr())).Bool("existing_state", hasState).
		Int("bootstrap_expect", a.cfg.BootstrapExpect).Msg("admin started")
	return nil
}

// open creates the stores, the transport and raft.
func (a *Admin) open() (rn *raftNode, hasState bool, err error) {
	if err := os.MkdirAll(a.cfg.DataDir, 0o700); err != nil {
		return nil, false, fmt.Errorf("create raft data dir: %w", err)
	}
	store, err := openBoltStore(filepath.Join(a.cfg.DataDir, raftDBFile))
	if err != nil {
		return nil, false, err
	}
	defer func() {
		if err != nil {
			_ = store.Close()
		}
	}()
	snaps, err := raft.NewFileSnapshotStoreWithLogger(a.cfg.DataDir, snapshotRetain, a.raftLog.Named("snapshot"))
	if err != nil {
		return nil, false, fmt.Errorf("open raft snapshots: %w", err)
	}
	hasState, err = raft.HasExistingState(store, store, snaps)
	if err != nil {
		return nil, false, fmt.Errorf("read raft state: %w", err)
	}
	trans, err := a.transport()
	if err != nil {
		return nil, false, err
	}
	logs, err := raft.NewLogCache(logCacheSize, store)
	if err != nil {
		_ = trans.Close()
		return nil, false, fmt.Errorf("raft log cache: %w", err)
	}
	r, err := raft.NewRaft(a.cfg.Raft, a.fsm, logs, store, snaps, trans)
	if err != nil {
		_ = trans.Close()
		return nil, false, fmt.Errorf("start raft: %w", err)
	}
	return &raftNode{raft: r, trans: trans, store: store}, hasState, nil
}

// transport binds raft's TCP transport over the authenticating stream
// layer (authLayer).
func (a *Admin) transport() (*raft.NetworkTransport, error) {
	stream, err := a.streamLayer()
	if err != nil {
		return nil, err
	}
	return raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  stream,
		Logger:  a.raftLog.Named("net"),
		MaxPool: transportMaxPool,
		Timeout: transportTimeout,
		// 1 turns pipelined replication off. raft v1.8.0's pipeline can
		// wedge a follower's replication goroutine for good after the
		// follower rejects an AppendEntries (hashicorp/raft#612), which
		// also hangs Shutdown; the catalog's write rate gains nothing
		// from pipelining.
		MaxRPCsInFlight: 1,
	}), nil
}

// streamLayer binds the raft listener; its advertised address must be a
// specific IP (raft's TCP transport checks the same).
func (a *Admin) streamLayer() (*authLayer, error) {
	var advertise net.Addr
	if a.cfg.AdvertiseAddr != "" {
		addr, err := net.ResolveTCPAddr("tcp", a.cfg.AdvertiseAddr)
		if err != nil {
			return nil, fmt.Errorf("raft advertise addr: %w", err)
		}
		advertise = addr
	}
	ln, err := net.Listen("tcp", a.cfg.BindAddr)
	if err != nil {
		return nil, fmt.Errorf("raft transport on %s: %w", a.cfg.BindAddr, err)
	}
	l := &authLayer{ln: ln, advertise: advertise, ring: a.raftKeys, tls: a.cfg.TLS, timeout: handshakeTimeout, log: a.log}
	if addr, ok := l.Addr().(*net.TCPAddr); !ok || addr.IP == nil || addr.IP.IsUnspecified() {
		_ = ln.Close()
		return nil, fmt.Errorf("raft transport on %s: the address to advertise is not a specific IP", a.cfg.BindAddr)
	}
	return l, nil
}

// Stop leaves raft: a leader first hands leadership to another voter
// (bounded by raft's election timeout), then raft shuts down and the
// store is closed. The node stays in the raft configuration; peers remove
// it when gossip reports it left. Stop is idempotent and safe before
// Start.
func (a *Admin) Stop() { a.stop(true) }

// stop is Stop; with transfer false a leader shuts down without handing
// over leadership, as a crash would (tests).
func (a *Admin) stop(transfer bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.done.Store(true)
	if a.state != running {
		a.state = stopped
		return
	}
	a.state = stopped
	rn := a.node.Swap(nil)
	if transfer && rn.raft.State() == raft.Leader {
		if err := rn.raft.LeadershipTransfer().Error(); err != nil {
			a.log.Warn().Err(err).Msg("leadership transfer failed")
		}
	}
	a.cancel()
	if err := rn.raft.Shutdown().Error(); err != nil { // also closes the listener
		a.log.Warn().Err(err).Msg("raft shutdown failed")
	}
	rn.trans.CloseStreams() // pooled connections, so peers' handlers end
	<-a.loop
	if err := rn.store.Close(); err != nil {
		a.log.Warn().Err(err).Msg("raft store close failed")
	}
	a.log.Info().Bool("transferred", transfer).Msg("admin stopped")
}

// running returns the raft node, or ErrNotStarted / ErrStopped.
func (a *Admin) running() (*raftNode, error) {
	if rn := a.node.Load(); rn != nil {
		return rn, nil
	}
	if a.done.Load() {
		return nil, ErrStopped
	}
	return nil, ErrNotStarted
}

// Addr returns the raft address other nodes reach this one at (the
// bound port when Config.BindAddr asked for port 0), or "" when not
// running. It is what the node should gossip as its RaftAddr.
func (a *Admin) Addr() string {
	rn, err := a.running()
	if err != nil {
		return ""
	}
	return string(rn.trans.LocalAddr())
}

// Catalog returns the catalog as last applied on this node (a follower's
// may lag the leader's by a heartbeat). It is a private copy made once per
// apply and shared by every caller until the next one: read it, do not
// modify its maps or slices (use Clone for a copy of your own). Before the
// first apply it is the zero Catalog.
func (a *Admin) Catalog() Catalog { return a.fsm.catalog() }

// Changed returns a channel nudged (buffered, never blocking the FSM)
// after every applied command and snapshot restore; read Catalog on each
// nudge.
func (a *Admin) Changed() <-chan struct{} { return a.changed }

func (a *Admin) nudge() {
	select {
	case a.changed <- struct{}{}:
	default:
	}
}

// Apply proposes cmd to the raft group and waits until it is applied.
// Only the leader proposes: elsewhere Apply returns a *NotLeaderError
// naming the leader, so that the API layer can forward the request. A zero
// At in cmd is set to the leader's clock. ctx's deadline bounds the call
// (default 10 s). The FSM's rejection (ErrUnknownShard, ErrShardExists,
// ErrInvalidTransition, ErrInvalidCommand) is returned as the error;
// invalid fields are rejected before proposing. When leadership is lost
// or ctx ends after proposing, the outcome is unknown: the command may
// still be applied.
func (a *Admin) Apply(ctx context.Context, cmd Command) error {
	rn, err := a.running()
	if err != nil {
		return err
	}
	if cmd == nil {
		return fmt.Errorf("apply nil command: %w", ErrInvalidCommand)
	}
	if err := cmd.check(); err != nil {
		return err
	}
	if rn.raft.State() != raft.Leader {
		return a.notLeader(rn)
	}
	return a.propose(ctx, rn, cmd.stamped(time.Now()))
}

// propose applies cmd through raft and returns the FSM's response.
func (a *Admin) propose(ctx context.Context, rn *raftNode, cmd Command) error {
	data, err := encodeCommand(cmd)
	if err != nil {
		return err
	}
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("apply %s: %w", cmd.Type(), err)
	}
	f := rn.raft.Apply(data, remaining(ctx))
	if err := wait(ctx, f); err != nil {
		return a.raftError(rn, fmt.Sprintf("apply %s", cmd.Type()), err)
	}
	if rejection, ok := f.Response().(error); ok {
		return rejection
	}
	return nil
}

// Leader returns the leader's node id and HTTP API address as this node
// knows them; both are empty while no leader is known. The API address
// comes from gossip and is empty when gossip does not know the leader.
func (a *Admin) Leader() (id, apiAddr string) {
	rn, err := a.running()
	if err != nil {
		return "", ""
	}
	_, lid := rn.raft.LeaderWithID()
	if lid == "" {
		return "", ""
	}
	return string(lid), a.apiAddr(string(lid))
}

// Servers returns the raft configuration, sorted by id.
func (a *Admin) Servers() ([]Server, error) {
	rn, err := a.running()
	if err != nil {
		return nil, err
	}
	f := rn.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, fmt.Errorf("raft configuration: %w", err)
	}
	_, leader := rn.raft.LeaderWithID()
	var out []Server
	for _, s := range f.Configuration().Servers {
		out = append(out, Server{
			ID:     string(s.ID),
			Addr:   string(s.Address),
			Voter:  s.Suffrage == raft.Voter,
			Leader: s.ID == leader,
		})
	}
	slices.SortFunc(out, func(x, y Server) int { return cmp.Compare(x.ID, y.ID) })
	return out, nil
}

// RemovePeer removes a server from the raft configuration: the operator's
// way to retire a dead node, which the leader otherwise keeps (a dead node
// may come back). If the server was a voter and a non-voter is alive, one
// is promoted before RemovePeer returns. A removed node that comes back
// alive in gossip is added again. Leader only (*NotLeaderError otherwise);
// the leader cannot remove itself (ErrRemoveLeader: stop it instead).
// Errors: ErrUnknownPeer for an id not in the configuration,
// ErrOutcomeUnknown when the change may or may not have been applied.
func (a *Admin) RemovePeer(ctx context.Context, id string) error {
	rn, err := a.running()
	if err != nil {
		return err
	}
	if rn.raft.State() != raft.Leader {
		return a.notLeader(rn)
	}
	if id == a.cfg.NodeID {
		return fmt.Errorf("remove peer %s: %w", id, ErrRemoveLeader)
	}
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	a.confMu.Lock()
	defer a.confMu.Unlock()
	servers, err := configuration(rn)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(servers, func(s raft.Server) bool { return string(s.ID) == id }) {
		return fmt.Errorf("remove peer %s: %w", id, ErrUnknownPeer)
	}
	f := rn.raft.RemoveServer(raft.ServerID(id), 0, remaining(ctx))
	if err := wait(ctx, f); err != nil {
		return a.raftError(rn, "remove peer "+id, err)
	}
	a.log.Info().Str("peer_id", id).Str("reason", "operator").Msg("raft peer removed")
	if err := a.reconcileLocked(ctx, rn); err != nil {
		return fmt.Errorf("remove peer %s: removed, but reconciling failed: %w", id, err)
	}
	return nil
}

// WaitReady waits until a leader is known and the catalog is not empty,
// or ctx ends. A cluster without Config.InitialShards stays not ready
// until an operator adds a shard.
func (a *Admin) WaitReady(ctx context.Context) error {
	t := time.NewTicker(readyPoll)
	defer t.Stop()
	for {
		rn, err := a.running()
		if err != nil {
			return err
		}
		if _, id := rn.raft.LeaderWithID(); id != "" && !a.Catalog().Empty() {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for admin catalog: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// notLeader builds the NotLeaderError for this node's view.
func (a *Admin) notLeader(rn *raftNode) error {
	_, id := rn.raft.LeaderWithID()
	if id == "" {
		return &NotLeaderError{}
	}
	return &NotLeaderError{LeaderID: string(id), LeaderAPIAddr: a.apiAddr(string(id))}
}

// apiAddr looks a node's HTTP API address up in gossip.
func (a *Admin) apiAddr(id string) string {
	for _, m := range a.peers.Members() {
		if m.NodeID == id {
			return m.APIAddr
		}
	}
	return ""
}

// raftError turns raft's leadership errors into NotLeaderError and wraps
// the rest with what was being done.
func (a *Admin) raftError(rn *raftNode, op string, err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader):
		return a.notLeader(rn)
	case errors.Is(err, raft.ErrRaftShutdown):
		return fmt.Errorf("%s: %w", op, ErrStopped)
	case errors.Is(err, raft.ErrLeadershipLost), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return fmt.Errorf("%s: %w: %w", op, ErrOutcomeUnknown, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// configuration returns the latest raft configuration's servers.
func configuration(rn *raftNode) ([]raft.Server, error) {
	f := rn.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, fmt.Errorf("raft configuration: %w", err)
	}
	return f.Configuration().Servers, nil
}

// wait waits for a raft future or for ctx. raft futures take no context;
// when ctx ends first the waiting goroutine ends once raft resolves the
// future, at the latest when raft shuts down.
func wait(ctx context.Context, f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// withDefaultTimeout gives ctx the default deadline when it has none.
func withDefaultTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, applyTimeoutDefault)
}

// remaining is the time left before ctx's deadline (which
// withDefaultTimeout guarantees), at least a millisecond: raft reads a
// zero timeout as none.
func remaining(ctx context.Context) time.Duration {
	d, _ := ctx.Deadline()
	return max(time.Until(d), time.Millisecond)
}

package membership

import (
	"cmp"
	"context"
	"fmt"
	"log"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/rs/zerolog"
)

// updateTimeoutDefault bounds UpdateMeta when its ctx has no deadline.
const updateTimeoutDefault = 5 * time.Second

// lifecycle of a Membership.
type lifecycle uint8

const (
	idle lifecycle = iota
	running
	stopped
)

// Membership is this node's view of the cluster, kept by memberlist
// gossip. Create it with New, Start it once and Stop it; its methods are
// safe for concurrent use.
type Membership struct {
	cfg       Config
	log       zerolog.Logger
	table     *table
	changed   chan struct{}          // public nudge, buffered(1)
	internal  chan struct{}          // nudge for the loop's change log, buffered(1)
	metaBytes atomic.Pointer[[]byte] // encoded metadata for delegate.NodeMeta
	// proofKeys are the keys of member proofs, the signing one first;
	// empty: none made or checked. Rotate replaces them.
	proofKeys atomic.Pointer[[][]byte]
	keyring   *memberlist.Keyring // the gossip keyring once started; nil: no encryption
	rejected  rejections

	mu     sync.Mutex // serialises Start, Stop and UpdateMeta
	state  lifecycle
	meta   Meta
	list   *memberlist.Memberlist
	cancel context.CancelFunc // ends the loop and aborts outgoing streams
	done   chan struct{}      // closed when the loop returns
}

// New checks cfg and returns a stopped Membership.
func New(cfg Config) (*Membership, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	enc, err := encodeMeta(cfg.Meta, false, cfg.signKey())
	if err != nil {
		return nil, fmt.Errorf("membership config: meta: %w", err)
	}
	m := &Membership{
		cfg:      cfg,
		log:      cfg.Logger.With().Str("component", "membership").Logger(),
		table:    newTable(),
		changed:  make(chan struct{}, 1),
		internal: make(chan struct{}, 1),
		meta:     cfg.Meta,
	}
	keys := cfg.memberKeys()
	m.proofKeys.Store(&keys)
	m.metaBytes.Store(&enc)
	return m, nil
}

// Start creates the memberlist (binding the gossip port) and returns. ctx
// bounds start-up only; the membership runs until Stop. Joining the
// Config.Join seeds happens in the background, retried with backoff until
// one answers, so Start does not wait for unreachable seeds: watch Changed
// and Alive to see the cluster form. A failed Start may be retried.
func (m *Membership) Start(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch m.state {
	case running:
		return ErrAlreadyStarted
	case stopped:
		return ErrStopped
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	list, err := m.create(runCtx)
	if err != nil {
		cancel()
		return err
	}
	m.state, m.list, m.cancel, m.done = running, list, cancel, make(chan struct{})
	self := list.LocalNode().Address()
	go m.run(runCtx, list, self)
	m.log.Info().Str("gossip_addr", self).Strs("join", m.cfg.Join).
		Bool("encrypted", len(m.cfg.GossipKey) > 0).Bool("member_proof", m.signKey() != nil).
		Msg("membership started")
	return nil
}

// create binds the transport and creates the memberlist.
func (m *Membership) create(ctx context.Context) (*memberlist.Memberlist, error) {
	mc := m.cfg.memberlistConfig()
	m.keyring = mc.Keyring
	mc.Logger = log.New(logWriter{m.log}, "", 0)
	mc.Delegate = delegate{m}
	mc.Events = eventDelegate{m}
	mc.Merge = mergeDelegate{m}
	mc.Alive = aliveDelegate{m}
	if m.cfg.tune != nil {
		m.cfg.tune(mc)
	}
	tr, err := newTransport(ctx, mc.BindAddr, mc.BindPort, mc.Logger)
	if err != nil {
		return nil, err
	}
	mc.Transport = tr
	mc.BindPort = tr.GetAutoBindPort()
	mc.AdvertisePort = cmp.Or(mc.AdvertisePort, mc.BindPort)
	list, err := memberlist.Create(mc)
	if err != nil {
		_ = tr.Shutdown()
		return nil, fmt.Errorf("create memberlist: %w", err)
	}
	return list, nil
}

// Stop leaves the cluster gracefully and shuts the memberlist down: it
// ends the background loop, announces the departure (peers then see this
// node as StateLeft rather than StateDead) and waits up to
// Config.LeaveTimeout for memberlist's leave broadcast, then closes the
// listeners. Stop is idempotent and safe before Start.
func (m *Membership) Stop() { m.stop(true) }

// stop is Stop; with leave false it skips the leave announcement, so that
// peers see this node fail (tests use this to simulate a crash).
func (m *Membership) stop(leave bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.state != running {
		m.state = stopped
		return
	}
	m.state = stopped
	m.cancel()
	<-m.done
	if leave {
		m.leave()
	}
	if err := m.list.Shutdown(); err != nil {
		m.log.Warn().Err(err).Msg("memberlist shutdown failed")
	}
	m.log.Info().Bool("left", leave).Msg("membership stopped")
}

// leave marks the metadata as leaving, then calls memberlist's Leave, both
// within Config.LeaveTimeout. Failures are logged: a peer that misses the
// announcement sees this node as dead instead of left, until a push/pull
// with a peer that saw it leave (mergeDelegate).
func (m *Membership) leave() {
	deadline := time.Now().Add(m.cfg.LeaveTimeout)
	enc, err := encodeMeta(m.meta, true, m.signKey())
	if err == nil {
		m.metaBytes.Store(&enc)
		err = m.list.UpdateNode(max(time.Until(deadline), time.Millisecond))
	}
	if err != nil {
		m.log.Warn().Err(err).Msg("leave announcement not confirmed")
	}
	if err := m.list.Leave(max(time.Until(deadline), time.Millisecond)); err != nil {
		m.log.Warn().Err(err).Msg("leave broadcast not confirmed")
	}
	// memberlist counts the leave as sent when its last copy leaves the
	// queue, not when it is on the wire, and a copy may go to a peer that
	// just died. Keep the sockets open a moment so it propagates (serf's
	// LeavePropagateDelay), within the leave timeout.
	if wait := min(leavePropagateDelay, time.Until(deadline)); wait > 0 {
		time.Sleep(wait)
	}
}

// leavePropagateDelay keeps gossip up after a leave so it reaches peers.
const leavePropagateDelay = 500 * time.Millisecond

// UpdateMeta replaces this node's metadata and gossips it. meta.NodeID may
// be empty; otherwise it must equal Config.NodeID. UpdateMeta waits until
// the update has been broadcast, bounded by ctx's deadline (default 5 s);
// on timeout the new metadata is still in effect and keeps spreading.
// Errors: ErrNotStarted, ErrStopped, ErrMetaTooLarge, or the broadcast
// timeout.
func (m *Membership) UpdateMeta(ctx context.Context, meta Meta) error {
	if err := m.cfg.checkMeta(meta); err != nil {
		return err
	}
	meta.NodeID = m.cfg.NodeID
	enc, err := encodeMeta(meta, false, m.signKey())
	if err != nil {
		return err
	}
	timeout := updateTimeoutDefault
	if deadline, ok := ctx.Deadline(); ok {
		timeout = time.Until(deadline)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	switch m.state {
	case idle:
		m.mu.Unlock()
		return ErrNotStarted
	case stopped:
		m.mu.Unlock()
		return ErrStopped
	}
	m.meta = meta
	m.metaBytes.Store(&enc)
	list := m.list
	m.mu.Unlock()
	if err := list.UpdateNode(max(timeout, time.Millisecond)); err != nil {
		return fmt.Errorf("update meta: %w", err)
	}
	return nil
}

// Members returns every member this node knows, including itself and dead
// and left members (until Config.ReconnectTimeout), sorted by NodeID.
func (m *Membership) Members() []Member {
	return m.table.list(func(Member) bool { return true })
}

// Alive returns the members in StateAlive, including this node, sorted by
// NodeID.
func (m *Membership) Alive() []Member {
	return m.table.list(func(mb Member) bool { return mb.State == StateAlive })
}

// Local returns this node as the cluster sees it. Before Start its
// GossipAddr is empty and its State is the zero State.
func (m *Membership) Local() Member {
	if mb, ok := m.table.get(m.cfg.NodeID); ok {
		return mb
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return Member{Meta: m.meta}
}

// Changed returns a channel that receives a value after members joined,
// left, failed, changed their metadata or were forgotten. Notifications
// coalesce: one value may stand for many changes, so a receiver re-reads
// Members or Alive instead of counting. The channel is never closed.
func (m *Membership) Changed() <-chan struct{} { return m.changed }

// observe records a memberlist event; see eventDelegate for the rules it
// follows. gone is true for NotifyLeave.
func (m *Membership) observe(n *memberlist.Node, gone bool) {
	if !m.proven(n) {
		m.reject(n) // unreachable while aliveDelegate refuses it first
		return
	}
	meta, leaving := decodeMeta(n.Name, n.Meta)
	state := StateAlive
	switch {
	case gone && leaving:
		state = StateLeft
	case gone:
		state = StateDead
	}
	m.table.set(Member{Meta: meta, GossipAddr: n.Address(), State: state}, time.Now())
	m.nudge()
}

// proven reports whether n's metadata carries a valid member proof, or
// whether proofs are off (no Config.ClusterKey).
func (m *Membership) proven(n *memberlist.Node) bool {
	keys := *m.proofKeys.Load()
	if len(keys) == 0 {
		return true
	}
	return slices.ContainsFunc(keys, func(k []byte) bool { return verifyMeta(k, n.Name, n.Meta) })
}

// reject counts a node refused for want of a member proof; the loop logs
// it. It runs inside memberlist callbacks, so it neither blocks nor logs.
func (m *Membership) reject(n *memberlist.Node) { m.rejected.add(n.Name, n.Address()) }

// Rejected returns how many times this node refused a node (an alive
// message or a joining push/pull) for want of a valid member proof since
// Start. It only grows; a rogue gossiping is refused over and over.
func (m *Membership) Rejected() uint64 { return m.rejected.total() }

// sawLeft records as left a member the table has dead, when a peer's
// state lists it as left.
func (m *Membership) sawLeft(n *memberlist.Node) {
	meta, _ := decodeMeta(n.Name, n.Meta)
	if m.table.leftIfDead(Member{Meta: meta, GossipAddr: n.Address(), State: StateLeft}, time.Now()) {
		m.nudge()
	}
}

// nudge signals both change channels without blocking.
func (m *Membership) nudge() {
	for _, ch := range []chan struct{}{m.changed, m.internal} {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

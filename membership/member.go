package membership

import (
	"cmp"
	"slices"
	"sync"
	"time"
)

// State is a member's state as this node sees it.
//
// memberlist v0.7.0 does not expose its "suspect" state (a member that
// missed a probe but has not yet been declared dead): a suspect member is
// reported as StateAlive until it is declared dead or refutes.
type State uint8

// States of a member. The zero State is not a state; Local reports it
// before Start.
const (
	// StateAlive: the member is part of the cluster (possibly suspected
	// of having failed, see State).
	StateAlive State = iota + 1
	// StateDead: the member stopped answering probes and was declared
	// failed (it crashed, hangs or is cut off), or it left but its
	// announcement did not reach this node. It is re-joined every
	// Config.RejoinInterval until it answers or Config.ReconnectTimeout
	// passes.
	StateDead
	// StateLeft: the member left gracefully (Stop). It is not re-joined.
	StateLeft
	// StateUntrusted: gossip has the member alive, but a check of the
	// node's own has not trusted it (package node: a cluster with TLS
	// counts a member only once its certificate verified). Gossip itself
	// never reports it.
	StateUntrusted
)

func (s State) String() string {
	switch s {
	case StateAlive:
		return "alive"
	case StateDead:
		return "dead"
	case StateLeft:
		return "left"
	case StateUntrusted:
		return "untrusted"
	default:
		return "unknown"
	}
}

// Member is one node of the cluster as this node sees it.
type Member struct {
	Meta
	// GossipAddr is the host:port the member gossips on.
	GossipAddr string
	// State is the member's state.
	State State
}

// table holds every member this node has heard of, including dead and
// left ones, which memberlist itself forgets or hides. The event delegate
// writes it; readers take copies.
type table struct {
	mu      sync.Mutex
	members map[string]entry // by NodeID
}

type entry struct {
	member Member
	since  time.Time // last change of member.State
}

func newTable() *table { return &table{members: make(map[string]entry)} }

// set records m, keeping the time of the last state change.
func (t *table) set(m Member, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.members[m.NodeID]
	if !ok || e.member.State != m.State {
		e.since = now
	}
	e.member = m
	t.members[m.NodeID] = e
}

// leftIfDead records m (StateLeft) if the table has its node dead, and
// reports whether it did.
func (t *table) leftIfDead(m Member, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.members[m.NodeID]
	if !ok || e.member.State != StateDead {
		return false
	}
	e.member, e.since = m, now
	t.members[m.NodeID] = e
	return true
}

// get returns the member with id.
func (t *table) get(id string) (Member, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.members[id]
	return e.member, ok
}

// list returns the members for which keep is true, sorted by NodeID.
func (t *table) list(keep func(Member) bool) []Member {
	t.mu.Lock()
	out := make([]Member, 0, len(t.members))
	for _, e := range t.members {
		if keep(e.member) {
			out = append(out, e.member)
		}
	}
	t.mu.Unlock()
	slices.SortFunc(out, func(a, b Member) int { return cmp.Compare(a.NodeID, b.NodeID) })
	return out
}

// reap forgets dead and left members whose state changed before cutoff,
// except self. It returns the forgotten members.
func (t *table) reap(self string, cutoff time.Time) []Member {
	t.mu.Lock()
	defer t.mu.Unlock()
	var gone []Member
	for id, e := range t.members {
		if id != self && e.member.State != StateAlive && e.since.Before(cutoff) {
			gone = append(gone, e.member)
			delete(t.members, id)
		}
	}
	return gone
}

// rejoinTargets returns the addresses to re-join, or nil when this node
// sees every known member alive and at least as many alive members as
// there are seeds. Targets are the seeds and the addresses of dead
// members, without duplicates and without selfAddr.
func (t *table) rejoinTargets(selfAddr string, seeds []string) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	alive, known := 0, 0
	var dead []string
	for _, e := range t.members {
		switch e.member.State {
		case StateAlive:
			alive++
			known++
		case StateDead:
			known++
			dead = append(dead, e.member.GossipAddr)
		}
	}
	if alive >= known && alive >= len(seeds) {
		return nil
	}
	slices.Sort(dead)
	var out []string
	for _, addr := range slices.Concat(seeds, dead) {
		if addr != selfAddr && addr != "" && !slices.Contains(out, addr) {
			out = append(out, addr)
		}
	}
	return out
}

// rejections counts the nodes refused for want of a member proof. The
// memberlist callbacks add to it; the background loop logs what was added
// since its last look, one line per RejoinInterval at most, so a rogue
// gossiping every few milliseconds cannot flood the log.
type rejections struct {
	mu       sync.Mutex
	count    uint64 // since Start
	unlogged uint64 // since the last log line
	lastID   string // the last refused node
	lastAddr string
}

func (r *rejections) add(id, addr string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.count++
	r.unlogged++
	r.lastID, r.lastAddr = id, addr
}

func (r *rejections) total() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.count
}

// take returns the refusals since the last take and the last refused node.
func (r *rejections) take() (n uint64, id, addr string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, r.unlogged = r.unlogged, 0
	return n, r.lastID, r.lastAddr
}

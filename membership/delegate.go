package membership

import (
	"fmt"

	"github.com/hashicorp/memberlist"
)

// delegate hands memberlist this node's metadata. The other Delegate
// methods are unused: the package sends no user messages or state.
type delegate struct{ m *Membership }

var _ memberlist.Delegate = delegate{}

// NodeMeta returns the encoded metadata, validated to fit limit.
func (d delegate) NodeMeta(limit int) []byte {
	b := *d.m.metaBytes.Load()
	if len(b) > limit {
		return nil // unreachable: Validate and UpdateMeta check the size
	}
	return b
}

func (delegate) NotifyMsg([]byte)                  {}
func (delegate) GetBroadcasts(_, _ int) [][]byte   { return nil }
func (delegate) LocalState(bool) []byte            { return nil }
func (delegate) MergeRemoteState(_ []byte, _ bool) {}

// eventDelegate records membership changes and nudges the listeners. It
// runs inside memberlist with memberlist's node lock held, so it must not
// call back into memberlist, block, or do I/O: it copies the node into the
// table (under the table's own lock, which is never held while calling
// memberlist) and nudges buffered(1) channels without blocking.
type eventDelegate struct{ m *Membership }

var _ memberlist.EventDelegate = eventDelegate{}

func (e eventDelegate) NotifyJoin(n *memberlist.Node)   { e.m.observe(n, false) }
func (e eventDelegate) NotifyUpdate(n *memberlist.Node) { e.m.observe(n, false) }
func (e eventDelegate) NotifyLeave(n *memberlist.Node)  { e.m.observe(n, true) }

// aliveDelegate refuses nodes that cannot prove the cluster key. memberlist
// asks it about every alive message, gossiped or merged from a push/pull,
// before the node enters its member list; an error drops the message, so
// a refused node is never probed, gossiped to or reported to the event
// delegate. It runs with memberlist's node lock held: it only computes an
// HMAC and counts the refusal (Membership.reject).
type aliveDelegate struct{ m *Membership }

var _ memberlist.AliveDelegate = aliveDelegate{}

func (d aliveDelegate) NotifyAlive(n *memberlist.Node) error {
	if !d.m.proven(n) {
		d.m.reject(n)
		return ErrInvalidProof
	}
	return nil
}

// mergeDelegate refuses a joining push/pull whose state lists a node
// without a valid member proof: that state comes from a node outside the
// cluster (or one that accepted such a node), so none of it is merged and
// the join fails. aliveDelegate would drop the unproven nodes one by one
// anyway; refusing the whole state keeps the rest of it out too.
//
// It also corrects a departure recorded as a failure. A peer that
// missed a leaving node's announcement (its leaving metadata, which the
// leave itself may overtake) records the node dead; a later push/pull with
// a node that saw it leave (the leaving node itself, during its rejoin, or
// any peer, every push/pull interval) lists it as left, and the table
// takes that. It never touches a member it has alive.
type mergeDelegate struct{ m *Membership }

var _ memberlist.MergeDelegate = mergeDelegate{}

func (d mergeDelegate) NotifyMerge(peers []*memberlist.Node) error {
	for _, n := range peers {
		if !d.m.proven(n) {
			d.m.reject(n)
			return fmt.Errorf("push/pull lists %s: %w", n.Name, ErrInvalidProof)
		}
	}
	for _, n := range peers {
		if n.State == memberlist.StateLeft {
			d.m.sawLeft(n)
		}
	}
	return nil
}

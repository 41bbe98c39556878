package membership

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/hashicorp/memberlist"
)

// Backoff of the initial join while no seed answers.
const (
	joinBackoffMin = 250 * time.Millisecond
	joinBackoffMax = 10 * time.Second
)

// run is the background loop of a running Membership. It joins the seeds
// (with backoff until one answers; being joined by a peer does not count,
// it may belong to a group that does not know the seeds), then every RejoinInterval forgets
// members past ReconnectTimeout and re-joins dead members and seeds when
// needed. It also logs member state changes, which the event delegate may
// not do itself. It returns when ctx is done; ctx also aborts an in-flight
// Join (see transport).
func (m *Membership) run(ctx context.Context, list *memberlist.Memberlist, selfAddr string) {
	defer close(m.done)
	timer := time.NewTimer(0)
	defer timer.Stop()
	joined := len(m.cfg.Join) == 0
	backoff := joinBackoffMin
	seen := make(map[string]Member)
	for attempt := 1; ; {
		select {
		case <-ctx.Done():
			return
		case <-m.internal:
			m.logChanges(seen)
		case <-timer.C:
			m.logRejections()
			next := m.cfg.RejoinInterval
			if !joined {
				joined = m.joinSeeds(ctx, list, selfAddr, attempt, backoff)
				if !joined {
					next = jitter(backoff)
					backoff = min(2*backoff, joinBackoffMax)
					attempt++
				}
			} else {
				m.reap()
				m.rejoin(ctx, list, selfAddr)
			}
			timer.Reset(next)
		}
	}
}

// joinSeeds tries the seeds once and reports whether one answered.
func (m *Membership) joinSeeds(ctx context.Context, list *memberlist.Memberlist, selfAddr string, attempt int, backoff time.Duration) bool {
	seeds := without(m.cfg.Join, selfAddr)
	if len(seeds) == 0 {
		return true
	}
	n, err := m.join(list, seeds)
	if ctx.Err() != nil {
		return false
	}
	if err != nil || n == 0 {
		m.log.Warn().Err(err).Int("attempt", attempt).Dur("retry_in", backoff).Msg("join failed")
		return false
	}
	m.log.Info().Int("contacted", n).Int("attempt", attempt).Msg("joined cluster")
	return true
}

// rejoin re-joins seeds and dead members while some known member is not
// alive; see table.rejoinTargets.
func (m *Membership) rejoin(ctx context.Context, list *memberlist.Memberlist, selfAddr string) {
	targets := m.table.rejoinTargets(selfAddr, m.cfg.Join)
	if len(targets) == 0 {
		return
	}
	n, err := m.join(list, targets)
	if ctx.Err() != nil {
		return
	}
	m.log.Debug().Err(err).Strs("targets", targets).Int("contacted", n).Msg("rejoin attempted")
}

// join calls memberlist's Join and reports the result to the test hook.
func (m *Membership) join(list *memberlist.Memberlist, addrs []string) (int, error) {
	n, err := list.Join(addrs)
	if m.cfg.joinAttempted != nil {
		m.cfg.joinAttempted(n, err)
	}
	return n, err
}

// reap forgets members dead or left for longer than ReconnectTimeout.
func (m *Membership) reap() {
	gone := m.table.reap(m.cfg.NodeID, time.Now().Add(-m.cfg.ReconnectTimeout))
	for _, mb := range gone {
		m.log.Info().Str("member_id", mb.NodeID).Stringer("member_state", mb.State).Msg("member forgotten")
	}
	if len(gone) > 0 {
		m.nudge()
	}
}

// logChanges logs one line per member whose state or addresses changed
// since the last call; seen is the loop's memory.
func (m *Membership) logChanges(seen map[string]Member) {
	for _, mb := range m.Members() {
		if old, ok := seen[mb.NodeID]; ok && old == mb {
			continue
		}
		seen[mb.NodeID] = mb
		m.log.Info().Str("member_id", mb.NodeID).Stringer("member_state", mb.State).
			Str("gossip_addr", mb.GossipAddr).Str("api_addr", mb.APIAddr).Str("raft_addr", mb.RaftAddr).
			Msg("member changed")
	}
}

// logRejections logs the nodes refused for want of a member proof since
// the last call, if any: the count and the last one refused.
func (m *Membership) logRejections() {
	n, id, addr := m.rejected.take()
	if n == 0 {
		return
	}
	m.log.Warn().Uint64("rejected", n).Str("member_id", id).Str("gossip_addr", addr).
		Msg("members without a valid member proof refused")
}

// jitter returns d ± 20%.
func jitter(d time.Duration) time.Duration {
	return d + time.Duration((rand.Float64()*0.4-0.2)*float64(d))
}

// without returns addrs minus self.
func without(addrs []string, self string) []string {
	out := make([]string, 0, len(addrs))
	for _, a := range addrs {
		if a != self {
			out = append(out, a)
		}
	}
	return out
}

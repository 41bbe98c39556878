package admin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/raft"

	"github.com/harvestd/harvest/membership"
)

// run is the admin loop. It wakes on gossip changes, on leadership
// changes and on the reconcile ticker. Until the cluster is bootstrapped
// (or this node has raft state) it tries to bootstrap; while this node
// leads it seeds an empty catalog and reconciles the raft configuration
// with gossip.
func (a *Admin) run(ctx context.Context, rn *raftNode, hasState bool) {
	defer close(a.loop)
	ticker := time.NewTicker(a.cfg.ReconcileInterval)
	defer ticker.Stop()
	boot := bootstrapper{pending: !hasState && a.cfg.BootstrapExpect > 0}
	leaderCh := rn.raft.LeaderCh()
	for {
		var settle <-chan time.Time
		if boot.pending {
			if wake := a.maybeBootstrap(rn, &boot); wake > 0 {
				settle = time.After(wake)
			}
		}
		if rn.raft.State() == raft.Leader {
			a.leaderDuties(ctx, rn)
		}
		select {
		case <-ctx.Done():
			return
		case leader := <-leaderCh:
			if leader {
				a.log.Info().Uint64("term", rn.raft.CurrentTerm()).Msg("leadership acquired")
			} else {
				a.log.Info().Msg("leadership lost")
			}
		case <-a.peers.Changed():
		case <-ticker.C:
		case <-settle:
		}
	}
}

// bootstrapper is the loop's bootstrap state.
type bootstrapper struct {
	pending   bool
	candidate []raft.Server // the initial configuration last computed
	since     time.Time     // when candidate was first computed
}

// bootstrapSettle is how long, in heartbeat timeouts, the same initial
// configuration must be seen before bootstrapping. It lets gossip views
// converge, and lets a node whose data dir was wiped hear from the
// existing leader instead of bootstrapping a second cluster.
const bootstrapSettle = 2

// maybeBootstrap bootstraps the cluster when BootstrapExpect members with
// a raft address are alive: the first BootstrapExpect of them by node id
// become the voters, provided this node is one of them. Every node that
// sees the same members computes the same configuration, and raft
// accepts identical bootstraps on every voter. It gives up for good once
// this node hears of a leader or has log entries (another node
// bootstrapped, or the cluster exists). It returns how long to wait before
// the next check while the configuration settles, else 0.
func (a *Admin) maybeBootstrap(rn *raftNode, b *bootstrapper) time.Duration {
	if _, id := rn.raft.LeaderWithID(); id != "" || rn.raft.LastIndex() > 0 {
		b.pending = false
		return 0
	}
	var alive []membership.Member
	for _, m := range a.peers.Alive() {
		if m.RaftAddr != "" {
			alive = append(alive, m)
		}
	}
	if len(alive) < a.cfg.BootstrapExpect {
		b.candidate = nil
		return 0
	}
	slices.SortFunc(alive, func(x, y membership.Member) int { return cmp.Compare(x.NodeID, y.NodeID) })
	servers := make([]raft.Server, 0, a.cfg.BootstrapExpect)
	for _, m := range alive[:a.cfg.BootstrapExpect] {
		servers = append(servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(m.NodeID), Address: raft.ServerAddress(m.RaftAddr)})
	}
	if !slices.ContainsFunc(servers, func(s raft.Server) bool { return string(s.ID) == a.cfg.NodeID }) {
		return 0 // another node bootstraps; its leader adds this one
	}
	settle := bootstrapSettle * a.cfg.Raft.HeartbeatTimeout
	if !slices.Equal(servers, b.candidate) {
		b.candidate, b.since = servers, time.Now()
		return settle
	}
	if wait := settle - time.Since(b.since); wait > 0 {
		return wait
	}
	b.pending = false
	err := rn.raft.BootstrapCluster(raft.Configuration{Servers: servers}).Error()
	switch {
	case errors.Is(err, raft.ErrCantBootstrap):
		a.log.Info().Msg("raft bootstrap skipped: state exists")
	case err != nil:
		b.pending = true
		a.log.Warn().Err(err).Msg("raft bootstrap failed")
	default:
		ids := make([]string, len(servers))
		for i, s := range servers {
			ids[i] = string(s.ID)
		}
		a.log.Info().Strs("voters", ids).Msg("raft cluster bootstrapped")
	}
	return 0
}

// leaderDuties seeds an empty catalog and reconciles the configuration.
// Failures are logged and retried on the next wake.
func (a *Admin) leaderDuties(ctx context.Context, rn *raftNode) {
	ctx, cancel := context.WithTimeout(ctx, applyTimeoutDefault)
	defer cancel()
	if err := a.bootstrapCatalog(ctx, rn); err != nil {
		a.log.Warn().Err(err).Msg("catalog bootstrap failed")
	}
	a.confMu.Lock()
	defer a.confMu.Unlock()
	if err := a.reconcileLocked(ctx, rn); err != nil {
		a.log.Warn().Err(err).Msg("raft membership reconcile failed")
	}
}

// bootstrapCatalog proposes Bootstrap with the static shards when the
// catalog is empty. A barrier first makes sure this leader has applied
// every earlier entry, so it does not propose on a lagging FSM (the FSM
// ignores a Bootstrap on a non-empty catalog anyway).
func (a *Admin) bootstrapCatalog(ctx context.Context, rn *raftNode) error {
	if len(a.cfg.InitialShards) == 0 || !a.Catalog().Empty() {
		return nil
	}
	if err := wait(ctx, rn.raft.Barrier(remaining(ctx))); err != nil {
		return fmt.Errorf("barrier: %w", err)
	}
	if !a.Catalog().Empty() {
		return nil
	}
	cmd := Bootstrap{Shards: a.cfg.InitialShards, Settings: a.cfg.Settings, At: time.Now().UTC()}
	if err := a.propose(ctx, rn, cmd); err != nil {
		return err
	}
	a.log.Info().Int("shards", len(cmd.Shards)).Msg("catalog bootstrapped")
	return nil
}

// reconcileLocked makes the raft configuration follow gossip, with confMu
// held:
//  1. servers whose member left gracefully are removed (dead ones stay
//     until RemovePeer or until they come back);
//  2. alive non-voters are promoted while there are fewer than MaxVoters
//     voters;
//  3. alive members with a raft address that are not servers are added,
//     as voters while there are fewer than MaxVoters, else as non-voters;
//     a server whose gossiped raft address changed is re-added with its
//     suffrage, which updates the address.
func (a *Admin) reconcileLocked(ctx context.Context, rn *raftNode) error {
	servers, err := configuration(rn)
	if err != nil {
		return err
	}
	members := a.peers.Members()
	slices.SortFunc(members, func(x, y membership.Member) int { return cmp.Compare(x.NodeID, y.NodeID) })
	servers = slices.Clone(servers)
	slices.SortFunc(servers, func(x, y raft.Server) int { return cmp.Compare(x.ID, y.ID) })
	state := make(map[string]membership.Member, len(members))
	for _, m := range members {
		state[m.NodeID] = m
	}
	inConfig := make(map[string]raft.Server, len(servers))
	voters := 0
	for _, s := range servers {
		if string(s.ID) != a.cfg.NodeID && state[string(s.ID)].State == membership.StateLeft {
			if err := a.change(ctx, rn, "remove", s.ID, "", s.Suffrage == raft.Voter); err != nil {
				return err
			}
			continue
		}
		inConfig[string(s.ID)] = s
		if s.Suffrage == raft.Voter {
			voters++
		}
	}
	for _, s := range servers {
		m, ok := state[string(s.ID)]
		if voters >= a.cfg.MaxVoters {
			break
		}
		if s.Suffrage == raft.Nonvoter && ok && m.State == membership.StateAlive {
			if err := a.change(ctx, rn, "promote", s.ID, s.Address, true); err != nil {
				return err
			}
			inConfig[string(s.ID)] = raft.Server{Suffrage: raft.Voter, ID: s.ID, Address: s.Address}
			voters++
		}
	}
	for _, m := range members {
		if m.State != membership.StateAlive || m.RaftAddr == "" || m.NodeID == "" {
			continue
		}
		s, ok := inConfig[m.NodeID]
		switch {
		case ok && string(s.Address) == m.RaftAddr:
			continue
		case ok:
			err = a.change(ctx, rn, "readdress", s.ID, raft.ServerAddress(m.RaftAddr), s.Suffrage == raft.Voter)
		case voters < a.cfg.MaxVoters:
			err = a.change(ctx, rn, "add", raft.ServerID(m.NodeID), raft.ServerAddress(m.RaftAddr), true)
			voters++
		default:
			err = a.change(ctx, rn, "add", raft.ServerID(m.NodeID), raft.ServerAddress(m.RaftAddr), false)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// change makes one configuration change and waits for it to commit.
// action is "add", "promote", "readdress" or "remove"; voter is the
// server's suffrage after the change (or before it, for "remove").
func (a *Admin) change(ctx context.Context, rn *raftNode, action string, id raft.ServerID, addr raft.ServerAddress, voter bool) error {
	var f raft.IndexFuture
	switch {
	case action == "remove":
		f = rn.raft.RemoveServer(id, 0, remaining(ctx))
	case voter:
		f = rn.raft.AddVoter(id, addr, 0, remaining(ctx))
	default:
		f = rn.raft.AddNonvoter(id, addr, 0, remaining(ctx))
	}
	if err := wait(ctx, f); err != nil {
		return a.raftError(rn, fmt.Sprintf("%s raft peer %s", action, id), err)
	}
	ev := a.log.Info().Str("peer_id", string(id)).Bool("voter", voter)
	switch action {
	case "remove":
		ev.Str("reason", "left").Msg("raft peer removed")
	case "promote":
		ev.Msg("raft peer promoted")
	case "readdress":
		ev.Str("raft_addr", string(addr)).Msg("raft peer address updated")
	default:
		ev.Str("raft_addr", string(addr)).Msg("raft peer added")
	}
	return nil
}

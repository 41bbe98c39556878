package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"
)

// Fault types.
const (
	FaultKill       = "kill -9 + restart"
	FaultPause      = "SIGSTOP / SIGCONT"
	FaultPartition  = "partition from peers"
	FaultIsolate    = "full isolation"
	FaultLeader     = "raft leader kill"
	FaultPGRestart  = "postgres restart"
	FaultDrainAdd   = "shard add + drain"
	FaultDrainUndo  = "shard undrain"
	probeOpDeadline = 90 * time.Second
)

// AllFaults are the fault types every profile injects at least once.
var AllFaults = []string{FaultKill, FaultPause, FaultPartition, FaultIsolate, FaultLeader, FaultPGRestart, FaultDrainAdd}

// Fault is one injected fault and what it took to recover from it.
type Fault struct {
	Type     string
	Node     int // 0: not a node fault
	Detail   string
	Injected time.Time
	Healed   time.Time
	// Recovery is heal -> first answered keyed start through the faulted
	// node (any node for cluster-wide faults).
	Recovery time.Duration
	// Ready is heal -> every node ready and seeing every member alive
	// (and a raft leader).
	Ready   time.Duration
	Skipped string // why it was not injected
	Err     string
}

// Nemesis injects faults into a running cluster.
type Nemesis struct {
	Cluster *Cluster
	PG      *Postgres
	Client  *Client
	Logf    func(format string, args ...any)
	// Hold is how long a fault lasts; Settle the pause after recovery.
	Hold, Settle time.Duration
	// AddShard is the next shard id to add and its DSN maker.
	AddShard uint16
	NewShard func(ctx context.Context, id uint16) (string, error)
	Faults   []*Fault
	probeSeq int
	drained  bool
}

func (n *Nemesis) randomNode() int { return 1 + rand.IntN(n.Cluster.Net.N) }

// Inject runs one fault of type typ to completion: inject, hold, heal,
// wait for recovery.
func (n *Nemesis) Inject(ctx context.Context, typ string) *Fault {
	f := &Fault{Type: typ, Injected: time.Now()}
	n.Faults = append(n.Faults, f)
	err := n.inject(ctx, f)
	if err != nil {
		f.Err = err.Error()
	}
	if f.Skipped != "" {
		n.Logf("nemesis: %s SKIPPED: %s", typ, f.Skipped)
		return f
	}
	if f.Healed.IsZero() {
		f.Healed = time.Now()
	}
	// Whatever happened, leave the cluster whole before measuring.
	n.healEverything()
	probeNode := f.Node
	if typ == FaultLeader || typ == FaultPGRestart || typ == FaultDrainAdd || typ == FaultDrainUndo {
		probeNode = 0
	}
	if p := n.probe(ctx, probeNode); p.OK {
		f.Recovery = p.End.Sub(f.Healed)
	} else {
		f.Err = strings.TrimSpace(f.Err + "; no answer through node after heal: " + p.Err)
	}
	if err := n.Cluster.WaitReady(ctx, 90*time.Second); err != nil {
		f.Err = strings.TrimSpace(f.Err + "; " + err.Error())
	}
	f.Ready = time.Since(f.Healed)
	n.Logf("nemesis: %-22s node %d %s  recovery %s  ready %s %s", typ, f.Node, f.Detail,
		f.Recovery.Round(time.Millisecond), f.Ready.Round(time.Millisecond), f.Err)
	sleepCtx(ctx, n.Settle)
	return f
}

// healEverything resumes, restarts and reconnects every node.
func (n *Nemesis) healEverything() {
	c := n.Cluster
	if err := c.Net.HealAll(); err != nil {
		n.Logf("nemesis: heal: %v", err)
	}
	for i := 1; i <= c.Net.N; i++ {
		if c.Running(i) {
			_ = c.Resume(i)
		} else if err := c.Start(i); err != nil {
			n.Logf("nemesis: restart node %d: %v", i, err)
		}
	}
}

func (n *Nemesis) inject(ctx context.Context, f *Fault) error {
	c := n.Cluster
	switch f.Type {
	case FaultKill:
		f.Node = n.randomNode()
		if err := c.Kill(f.Node); err != nil {
			return err
		}
		sleepCtx(ctx, n.Hold)
		f.Healed = time.Now()
		return c.Start(f.Node)
	case FaultPause:
		f.Node = n.randomNode()
		if err := c.Pause(f.Node); err != nil {
			return err
		}
		sleepCtx(ctx, n.Hold)
		f.Healed = time.Now()
		return c.Resume(f.Node)
	case FaultPartition:
		f.Node = n.randomNode()
		if err := c.Net.CutPeers(f.Node); err != nil {
			return err
		}
		sleepCtx(ctx, n.Hold+n.Hold/2)
		f.Healed = time.Now()
		return c.Net.Heal(f.Node)
	case FaultIsolate:
		f.Node = n.randomNode()
		if err := c.Net.Isolate(f.Node); err != nil {
			return err
		}
		sleepCtx(ctx, n.Hold+n.Hold/2)
		f.Healed = time.Now()
		return c.Net.Heal(f.Node)
	case FaultLeader:
		if !c.Raft {
			f.Skipped = "the nodes run without the raft catalog (harvestd agent has no raft flags)"
			return nil
		}
		leader, err := c.Leader(ctx)
		if err != nil {
			return err
		}
		f.Node = leader
		f.Detail = "(leader " + NodeID(leader) + ")"
		if err := c.Kill(leader); err != nil {
			return err
		}
		t0 := time.Now()
		for time.Since(t0) < 30*time.Second { // time the new election
			if l, err := c.Leader(ctx); err == nil && l != leader {
				f.Detail = fmt.Sprintf("(leader %s, new leader %s after %s)", NodeID(leader), NodeID(l), time.Since(t0).Round(100*time.Millisecond))
				break
			}
			sleepCtx(ctx, 200*time.Millisecond)
		}
		sleepCtx(ctx, n.Hold-min(n.Hold, time.Since(t0)))
		f.Healed = time.Now()
		return c.Start(leader)
	case FaultPGRestart:
		if err := n.PG.Stop(true); err != nil {
			return err
		}
		sleepCtx(ctx, n.Hold/2)
		f.Healed = time.Now()
		return n.PG.startServer()
	case FaultDrainAdd:
		if !c.Raft {
			f.Skipped = "the nodes run without the raft catalog: no shard admin routes"
			return nil
		}
		if n.drained {
			f.Type = FaultDrainUndo
			n.drained = false
			f.Detail = "(undrain shard 1)"
			return c.doJSON(ctx, "POST", c.URL(n.randomNode())+"/api/harvest/admin/shards/1/undrain", nil, nil)
		}
		id := n.AddShard
		dsn, err := n.NewShard(ctx, id)
		if err != nil {
			return err
		}
		t0 := time.Now()
		body := fmt.Sprintf(`{"shard_id": %d, "dsn": %q}`, id, dsn)
		if err := retryAdmin(ctx, func() error {
			return c.doJSON(ctx, "POST", c.URL(n.randomNode())+"/api/harvest/admin/shards", strings.NewReader(body), nil)
		}); err != nil {
			return fmt.Errorf("add shard %d: %w", id, err)
		}
		add := time.Since(t0)
		n.AddShard++
		sleepCtx(ctx, n.Hold)
		t0 = time.Now()
		if err := retryAdmin(ctx, func() error {
			return c.doJSON(ctx, "POST", c.URL(n.randomNode())+"/api/harvest/admin/shards/1/drain", strings.NewReader(`{"force": false}`), nil)
		}); err != nil {
			return fmt.Errorf("drain shard 1: %w", err)
		}
		n.drained = true
		f.Detail = fmt.Sprintf("(add shard %d in %s, drain shard 1 in %s)", id, add.Round(time.Millisecond), time.Since(t0).Round(time.Millisecond))
		sleepCtx(ctx, n.Hold)
		f.Healed = time.Now()
		return nil
	}
	return fmt.Errorf("unknown fault %q", f.Type)
}

// retryAdmin retries an admin call on transient refusals (transientAdmin)
// for up to 30 s.
func retryAdmin(ctx context.Context, call func() error) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := call()
		if err == nil || time.Now().After(deadline) || !transientAdmin(err) {
			return err
		}
		sleepCtx(ctx, 500*time.Millisecond)
	}
}

// transientAdmin says an admin call may succeed if sent again: a transport
// error or a 5xx (a leader change), or a drain refused because a shard's
// database could not be read just then (one an earlier fault restarted).
func transientAdmin(err error) bool {
	var se *StatusError
	if !errors.As(err, &se) {
		return true
	}
	return se.Code >= 500 ||
		(se.Code == http.StatusConflict && strings.Contains(se.Body, `"unsafe_drain"`) && strings.Contains(se.Body, "unreachable"))
}

// probe sends a fresh keyed start through node (0: random nodes) until it
// is answered; it is recorded like any op.
func (n *Nemesis) probe(ctx context.Context, node int) *Op {
	n.probeSeq++
	pctx, cancel := context.WithTimeout(ctx, probeOpDeadline)
	defer cancel()
	return n.Client.Do(pctx, &Op{Kind: KindStart, Workflow: wfOnboarding, Key: fmt.Sprintf("probe-%d", n.probeSeq), Probe: true}, node)
}

func sleepCtx(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

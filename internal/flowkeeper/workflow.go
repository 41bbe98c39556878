package flowkeeper

import (
	"cmp"

	"github.com/harvestd/harvest"
)

// Names of the keeper workflow and its signals.
const (
	// WorkflowName is the keeper's workflow: reserved, a system workflow.
	WorkflowName = "hv.flow.keeper"
	// AcquireSignal and ReleaseSignal are what the keeper receives.
	// Both are system signals: only Harvest sends them.
	AcquireSignal = "hv:flow_acquire"
	ReleaseSignal = "hv:flow_release"
	// StateQuery answers the keeper's State.
	StateQuery = "state"
	// GrantSignal is what the keeper sends a run it gives a slot; the
	// engine acts on it (harvest.FlowGrantSignal).
	GrantSignal = harvest.FlowGrantSignal
	// RunSignals is how many signals one keeper run handles before it
	// continues as new, carrying its State.
	RunSignals = 500
)

// The keeper's signals.
var (
	acquire = harvest.NewSignal[Acquire](AcquireSignal)
	release = harvest.NewSignal[Release](ReleaseSignal)
	grant   = harvest.NewSignal[Grant](GrantSignal)
)

// Workflow is the keeper: register it on every node that runs limits
// counted across the cluster.
var Workflow = harvest.NewWorkflow(WorkflowName, keep).WithSignals(acquire, release)

// WorkflowID is the keeper's workflow id for a workflow's concurrency
// key: one keeper per (workflow, key), placed by this id like any run.
func WorkflowID(workflow, key string) string { return "hv:flow:" + workflow + "/" + key }

// keep is one run of a keeper's chain: it applies the signals in the
// order they arrived and sends each grant as a keyed external signal
// (exactly once: the send is recorded with the run's task), then
// continues as new every Every (RunSignals) signals. A grant the run
// refuses (it closed meanwhile: cancelled while it waited, its release
// not yet here) frees the slot at once. It never completes: an idle
// keeper is one row.
func keep(ctx harvest.Context, s State) (struct{}, error) {
	harvest.SetQueryHandler(ctx, StateQuery, func(struct{}) (State, error) { return s, nil })
	k := &keeper{s: &s, sel: harvest.NewSelector(ctx)}
	k.sel.AddReceive(acquire, func() {
		// A payload that does not decode was refused when it was sent
		// (the signals are declared); one that slipped by changes nothing.
		k.handled++
		if a, err := acquire.Receive(ctx); err == nil {
			k.send(ctx, s.Acquire(a))
		}
	})
	k.sel.AddReceive(release, func() {
		k.handled++
		if r, err := release.Receive(ctx); err == nil {
			k.send(ctx, s.Release(r))
		}
	})
	for k.handled < cmp.Or(s.Every, RunSignals) && !harvest.ShouldContinueAsNew(ctx) {
		k.sel.Select(ctx)
		if err := ctx.Err(); err != nil {
			return struct{}{}, err
		}
	}
	// The grants' answers come back to this run: wait for them, so that
	// none is lost with it.
	for k.pending > 0 {
		k.sel.Select(ctx)
	}
	s.Runs++
	return struct{}{}, harvest.ContinueAsNew(ctx, s)
}

// keeper is a keeper run's state and its selector.
type keeper struct {
	s       *State
	sel     *harvest.Selector
	pending int // grants not answered yet
	handled int // signals received
}

// send sends the grants, and frees the slot of each one its run refuses.
func (k *keeper) send(ctx harvest.Context, grants []Entry) {
	for _, g := range grants {
		f := harvest.SignalExternal(ctx, g.Execution, grant, Grant{Chain: g.Chain})
		k.pending++
		k.sel.AddFuture(f, func() {
			k.pending--
			if _, err := f.Get(ctx); err != nil {
				k.send(ctx, k.s.Refuse(g.Chain))
			}
		})
	}
}

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
	AcquireSignal = "acquire"
	ReleaseSignal = "release"
	// StateQuery answers the keeper's State.
	StateQuery = "state"
	// GrantSignal is what the keeper sends a run it gives a slot; the
	// engine acts on it (the run's workflow code never sees it).
	GrantSignal = "hv:flowgrant"
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
// continues as new every RunSignals signals. It never completes: an idle
// keeper is one row.
func keep(ctx harvest.Context, s State) (struct{}, error) {
	harvest.SetQueryHandler(ctx, StateQuery, func(struct{}) (State, error) { return s, nil })
	var grants []Entry
	sel := harvest.NewSelector(ctx)
	sel.AddReceive(acquire, func() {
		// A payload that does not decode was refused when it was sent
		// (the signals are declared); one that slipped by changes nothing.
		if a, err := acquire.Receive(ctx); err == nil {
			grants = s.Acquire(a)
		}
	})
	sel.AddReceive(release, func() {
		if r, err := release.Receive(ctx); err == nil {
			grants = s.Release(r)
		}
	})
	for range cmp.Or(s.Every, RunSignals) {
		if harvest.ShouldContinueAsNew(ctx) {
			break
		}
		grants = nil
		sel.Select(ctx)
		if err := ctx.Err(); err != nil {
			return struct{}{}, err
		}
		for _, g := range grants {
			harvest.SignalExternal(ctx, g.Execution, grant, Grant{Chain: g.Chain})
		}
	}
	s.Runs++
	return struct{}{}, harvest.ContinueAsNew(ctx, s)
}

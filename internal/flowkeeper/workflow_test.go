package flowkeeper_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine"
	"github.com/harvestd/harvest/harvesttest"
	"github.com/harvestd/harvest/internal/flowkeeper"
)

// holder stands for a limited run: it waits for its grant and returns the
// chain the grant names.
var holder = harvest.NewWorkflow("holder", func(ctx harvest.Context, _ struct{}) (string, error) {
	g, err := grant.Receive(ctx)
	return g.Chain, err
}).WithSignals(grant)

var grant = harvest.NewSignal[flowkeeper.Grant](flowkeeper.GrantSignal)

func setup(t *testing.T) *harvesttest.Env {
	t.Helper()
	reg := harvest.NewRegistry()
	require.NoError(t, reg.Register(flowkeeper.Workflow, holder))
	return harvesttest.New(t, reg)
}

// state queries a keeper run's State.
func state(t *testing.T, env *harvesttest.Env, id uuid.UUID) flowkeeper.State {
	t.Helper()
	raw, err := env.Engine().Query(context.Background(), id, flowkeeper.StateQuery, nil)
	require.NoError(t, err)
	var s flowkeeper.State
	require.NoError(t, json.Unmarshal(raw, &s))
	return s
}

func holders(s flowkeeper.State) (held, waiting []string) {
	for _, e := range s.Holders {
		held = append(held, e.Chain)
	}
	for _, e := range s.Waiting {
		waiting = append(waiting, e.Chain)
	}
	return held, waiting
}

// The keeper grants a key's slots up to its limit, once per chain however
// often a keyed acquire is delivered, grants the next waiter when a
// holder releases, and carries its state over a continue-as-new.
func TestKeeper(t *testing.T) {
	t.Parallel()
	env := setup(t)
	keeper := env.Start(flowkeeper.WorkflowName, flowkeeper.State{Workflow: "w", Key: "k", Every: 4},
		harvesttest.WithWorkflowID(flowkeeper.WorkflowID("w", "k")))
	runs := make([]engine.StartResult, 3)
	for i := range runs {
		runs[i] = env.Start(holder.Name(), struct{}{})
		a := flowkeeper.Acquire{Chain: fmt.Sprint("c", i), Execution: runs[i].ExecutionID.String(), Max: 2}
		for range 2 { // a delivery and its retry
			env.Signal(keeper.ExecutionID, flowkeeper.AcquireSignal, a, harvesttest.WithSignalKey("hv:flowacq:"+a.Chain))
		}
	}
	for i := range 2 {
		var chain string
		env.Output(runs[i].ExecutionID, &chain)
		require.Equal(t, fmt.Sprint("c", i), chain)
	}
	held, waiting := holders(state(t, env, keeper.ExecutionID))
	require.Equal(t, []string{"c0", "c1"}, held)
	require.Equal(t, []string{"c2"}, waiting)
	require.Equal(t, "RUNNING", env.Describe(runs[2].ExecutionID).Execution.State, "no grant past the limit")

	env.Signal(keeper.ExecutionID, flowkeeper.ReleaseSignal, flowkeeper.Release{Chain: "c0"}, harvesttest.WithSignalKey("hv:flowrel:c0"))
	var chain string
	env.Output(runs[2].ExecutionID, &chain)
	require.Equal(t, "c2", chain, "the release granted the waiter, in the task that continued as new")
	// The fourth signal ends the run (Every 4), once its grant's answer
	// came back to it.
	next := env.WaitFor(keeper.ExecutionID, "the keeper continued as new", func(d engine.Description) bool {
		return d.Execution.ContinuedTo != nil
	}).Execution.ContinuedTo
	s := state(t, env, *next)
	held, waiting = holders(s)
	require.Equal(t, []string{"c1", "c2"}, held)
	require.Empty(t, waiting)
	require.Equal(t, 1, s.Runs)
}

// A grant its run refuses — it closed while it waited, its release not
// there yet — frees the slot at once for the next waiter.
func TestKeeperRefusedGrant(t *testing.T) {
	t.Parallel()
	env := setup(t)
	keeper := env.Start(flowkeeper.WorkflowName, flowkeeper.State{Workflow: "w", Key: "k"})
	acquire := func(chain string, run engine.StartResult) {
		a := flowkeeper.Acquire{Chain: chain, Execution: run.ExecutionID.String(), Max: 1}
		env.Signal(keeper.ExecutionID, flowkeeper.AcquireSignal, a, harvesttest.WithSignalKey("hv:flowacq:"+chain))
	}
	a, gone, c := env.Start(holder.Name(), struct{}{}), env.Start(holder.Name(), struct{}{}), env.Start(holder.Name(), struct{}{})
	_, err := env.Engine().Terminate(context.Background(), gone.ExecutionID, "closed while it waited")
	require.NoError(t, err)
	acquire("a", a)
	var chain string
	env.Output(a.ExecutionID, &chain)
	acquire("gone", gone)
	acquire("c", c)
	env.Signal(keeper.ExecutionID, flowkeeper.ReleaseSignal, flowkeeper.Release{Chain: "a"}, harvesttest.WithSignalKey("hv:flowrel:a"))
	env.Output(c.ExecutionID, &chain)
	require.Equal(t, "c", chain, "the refused grant's slot went to the next waiter")
	held, waiting := holders(state(t, env, keeper.ExecutionID))
	require.Equal(t, []string{"c"}, held)
	require.Empty(t, waiting)
}

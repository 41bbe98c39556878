package harvesttest_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine"
	"github.com/harvestd/harvest/harvesttest"
)

var (
	greetWF = harvest.NewWorkflow("greet", func(ctx harvest.Context, name string) (string, error) {
		if err := harvest.Sleep(ctx, time.Hour); err != nil {
			return "", err
		}
		return "hello " + name, nil
	})
	// greeterWF greets through a child and tells a listener about it.
	greeterWF = harvest.NewWorkflow("greeter", func(ctx harvest.Context, listener string) (string, error) {
		out, err := greetWF.Execute(ctx, "ann").Get(ctx)
		if err != nil {
			return "", err
		}
		_, err = harvest.SignalExternal(ctx, listener, approved, out).Get(ctx)
		return out, err
	})
	listenWF = harvest.NewWorkflow("listen", func(ctx harvest.Context, _ string) (string, error) {
		return approved.Receive(ctx)
	})
)

// An Env runs child workflows and signals to other workflows as a node
// does, on its one shard, with the test clock.
func TestEnvChildren(t *testing.T) {
	reg := harvest.NewRegistry().MustRegister(greetWF, greeterWF, listenWF)
	env := harvesttest.New(t, reg)
	listener := env.Start("listen", "")
	parent := env.Start("greeter", listener.ExecutionID.String())
	children := env.WaitFor(parent.ExecutionID, "a running child", func(d engine.Description) bool {
		return len(d.Children) == 1 && d.Children[0].State == engine.StateRunning
	}).Children
	env.SkipTime(*children[0].ExecutionID)
	var out string
	env.Output(parent.ExecutionID, &out)
	require.Equal(t, "hello ann", out)
	var heard string
	env.Output(listener.ExecutionID, &heard)
	require.Equal(t, "hello ann", heard)
}

// notifyWF tells the running listen run of a workflow id.
var notifyWF = harvest.NewWorkflow("notify", func(ctx harvest.Context, workflowID string) (string, error) {
	_, err := harvest.SignalExternalWorkflow(ctx, listenWF.Name(), workflowID, approved, "by id").Get(ctx)
	var refused *harvest.ExternalSignalError
	if errors.As(err, &refused) {
		return refused.Info.Type, nil
	}
	return "sent", err
})

// SignalExternalWorkflow resolves a workflow id in an Env as on a node.
func TestEnvSignalExternalWorkflow(t *testing.T) {
	reg := harvest.NewRegistry().MustRegister(listenWF, notifyWF)
	env := harvesttest.New(t, reg)
	listener := env.Start("listen", "", harvesttest.WithWorkflowID("inbox"))
	sent := env.Start("notify", "inbox")
	var out, heard string
	env.Output(sent.ExecutionID, &out)
	require.Equal(t, "sent", out)
	env.Output(listener.ExecutionID, &heard)
	require.Equal(t, "by id", heard)

	missing := env.Start("notify", "no-such-inbox")
	env.Output(missing.ExecutionID, &out)
	require.Equal(t, "not_found", out)
}

package harvest_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
)

var (
	digestChild      = harvest.NewWorkflow("digest-child", func(_ harvest.Context, in string) (string, error) { return in, nil })
	digestOtherChild = harvest.NewWorkflow("digest-other-child", func(_ harvest.Context, in string) (string, error) { return in, nil })
	digestSig        = harvest.NewSignal[string]("digest-sig")
	digestOtherSig   = harvest.NewSignal[string]("digest-other-sig")
)

// issuing is a workflow whose first task issues one command by call.
func issuing(call func(ctx harvest.Context) error) *harvest.Workflow[string, string] {
	return harvest.NewWorkflow("issuing", func(ctx harvest.Context, _ string) (string, error) {
		return "", call(ctx)
	})
}

func child(name *harvest.Workflow[string, string], in string, opts ...harvest.ChildOptions) func(harvest.Context) error {
	return func(ctx harvest.Context) error {
		_, err := name.Execute(ctx, in, opts...).Get(ctx)
		return err
	}
}

func signalRun(target string, sig harvest.Signal[string], payload string) func(harvest.Context) error {
	return func(ctx harvest.Context) error {
		_, err := harvest.SignalExternal(ctx, target, sig, payload).Get(ctx)
		return err
	}
}

func signalWorkflow(name, id, payload string) func(harvest.Context) error {
	return func(ctx harvest.Context) error {
		_, err := harvest.SignalExternalWorkflow(ctx, name, id, digestSig, payload).Get(ctx)
		return err
	}
}

// A child or external signal command whose arguments changed between the
// recorded history and the code is a NonDeterminismError on replay, on
// the command's event, naming what differs.
func TestOutboxCommandsAreDeterministic(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name             string
		recorded, replay func(harvest.Context) error
		want             string
	}{
		{"ChildInput", child(digestChild, "a"), child(digestChild, "b"), `argument "input or options" differs`},
		{"ChildWorkflowID", child(digestChild, "a", harvest.ChildOptions{WorkflowID: "x"}),
			child(digestChild, "a", harvest.ChildOptions{WorkflowID: "y"}), `argument "input or options" differs`},
		{"ChildClosePolicy", child(digestChild, "a"), child(digestChild, "a", harvest.ChildOptions{ParentClosePolicy: harvest.ParentCloseAbandon}),
			`argument "input or options" differs`},
		{"ChildWorkflowName", child(digestChild, "a"), child(digestOtherChild, "a"), "history has ChildWorkflowInitiated"},
		{"SignalTarget", signalRun("run-a", digestSig, "x"), signalRun("run-b", digestSig, "x"), `argument "target or payload" differs`},
		{"SignalPayload", signalRun("run-a", digestSig, "x"), signalRun("run-a", digestSig, "y"), `argument "target or payload" differs`},
		{"SignalName", signalRun("run-a", digestSig, "x"), signalRun("run-a", digestOtherSig, "x"), "history has SignalExternalInitiated"},
		{"SignalWorkflowID", signalWorkflow("w", "id-a", "x"), signalWorkflow("w", "id-b", "x"), `argument "target or payload" differs`},
		{"SignalWorkflowName", signalWorkflow("w", "id-a", "x"), signalWorkflow("v", "id-a", "x"), `argument "target or payload" differs`},
		{"SignalWorkflowPayload", signalWorkflow("w", "id-a", "x"), signalWorkflow("w", "id-a", "y"), `argument "target or payload" differs`},
		{"SignalRunBecomesWorkflowID", signalRun("id-a", digestSig, "x"), signalWorkflow("w", "id-a", "x"), `argument "target or payload" differs`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := recordWith(t, harvest.NewRegistry().MustRegister(issuing(tt.recorded)), "issuing", "")
			require.Len(t, h.events, 2, "the command is recorded")
			h.reg = harvest.NewRegistry().MustRegister(issuing(tt.recorded))
			_, err := h.task()
			require.NoError(t, err, "the unchanged code replays")
			nd := replayWith(t, h, harvest.NewRegistry().MustRegister(issuing(tt.replay)))
			require.Equal(t, int64(1), nd.EventID, "the command's event")
			require.Contains(t, nd.Error(), tt.want)
		})
	}
}

package engine

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
)

// feeWorkflow is the workflow "fee" of a deploy: v1 looks the fee up
// "flat", v2 guards the "percent" lookup with GetVersion. Both wait for
// the signal "go" after the lookup.
func feeWorkflow(v2 bool) (*harvest.Registry, error) {
	lookup := harvest.NewActivity("lookup", func(_ *harvest.ActivityContext, how string) (string, error) { return how, nil })
	next := harvest.NewSignal[string]("go")
	wf := harvest.NewWorkflow("fee", func(ctx harvest.Context, _ string) (string, error) {
		how := "flat"
		if v2 && harvest.GetVersion(ctx, "fee-lookup", harvest.DefaultVersion, 1) == 1 {
			how = "percent"
		}
		fee, err := lookup.Execute(ctx, how).Get(ctx)
		if err != nil {
			return "", err
		}
		_, err = next.Receive(ctx)
		return fee, err
	})
	reg := harvest.NewRegistry()
	return reg, reg.Register(lookup, wf)
}

// waitEvent waits until the run's history holds an event of type et.
func waitEvent(t *testing.T, e *Engine, id uuid.UUID, et harvest.EventType) {
	t.Helper()
	require.Eventually(t, func() bool {
		return slices.Contains(eventTypes(t, e.pool, id), string(et))
	}, 20*time.Second, 10*time.Millisecond, "no %s in run %s", et, id)
}

func TestGetVersionAcrossADeploy(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var err error
	b.reg, err = feeWorkflow(false)
	require.NoError(t, err)
	v1 := b.engine(t)
	old := start(t, v1, StartRequest{WorkflowName: "fee", Input: raw(t, "")}).ExecutionID
	waitEvent(t, v1, old, harvest.EventActivityCompleted)
	v1.Stop()

	b.reg, err = feeWorkflow(true)
	require.NoError(t, err)
	v2 := b.engine(t)
	fresh := start(t, v2, StartRequest{WorkflowName: "fee", Input: raw(t, "")}).ExecutionID
	waitEvent(t, v2, fresh, harvest.EventActivityCompleted)
	for _, id := range []uuid.UUID{old, fresh} {
		_, err := v2.Signal(context.Background(), SignalRequest{ExecutionID: id, SignalName: "go", Payload: raw(t, "now")})
		require.NoError(t, err)
	}

	for id, want := range map[uuid.UUID]string{old: `"flat"`, fresh: `"percent"`} {
		x := waitClosed(t, v2, id)
		require.Equal(t, StateCompleted, x.State, "run %s: last error %q", id, x.LastError)
		require.JSONEq(t, want, string(x.Output))
	}
	require.NotContains(t, eventTypes(t, v2.pool, old), string(harvest.EventMarkerRecorded), "the v1 run records no version")
	require.Contains(t, eventTypes(t, v2.pool, fresh), string(harvest.EventMarkerRecorded))
}

package engine

import (
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
)

// TestUnencodableOutput: an output JSON cannot encode fails for good at
// once, naming its definition and the value's place.
func TestUnencodableOutput(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var bodies atomic.Int32
	charge := harvest.NewActivity("charge", func(*harvest.ActivityContext, string) (float64, error) {
		bodies.Add(1)
		return math.NaN(), nil
	}, harvest.ActivityOptions{Retry: &harvest.RetryPolicy{MaxAttempts: 3, InitialInterval: 10 * time.Millisecond}})
	require.NoError(t, b.reg.Register(charge,
		harvest.NewWorkflow("charging", func(ctx harvest.Context, in string) (float64, error) {
			return charge.Execute(ctx, in).Get(ctx)
		}),
		harvest.NewWorkflow("infinite", func(harvest.Context, string) (map[string]float64, error) {
			return map[string]float64{"ratio": math.Inf(1)}, nil
		}),
	))
	e := b.engine(t)

	t.Run("ActivityIsNotRetried", func(t *testing.T) {
		run := start(t, e, StartRequest{WorkflowName: "charging"})
		x := waitClosed(t, e, run.ExecutionID)
		require.Equal(t, StateFailed, x.State)
		require.Contains(t, string(x.Error), `activity \"charge\": output: json: unsupported value: NaN`)
		require.EqualValues(t, 1, bodies.Load(), "the activity body ran once")
	})

	t.Run("WorkflowFails", func(t *testing.T) {
		run := start(t, e, StartRequest{WorkflowName: "infinite"})
		x := waitClosed(t, e, run.ExecutionID)
		require.Equal(t, StateFailed, x.State)
		require.Contains(t, string(x.Error), `workflow \"infinite\": output.ratio: json: unsupported value: +Inf`)
	})
}

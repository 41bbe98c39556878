package engine

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
)

// childBenchRound is how many runs of one kind a round starts.
const childBenchRound = 64

// BenchmarkChildVsActivity measures, side by side on one engine, a parent
// whose one child runs one no-op activity against a workflow that runs
// one no-op activity itself, start to completion: each of b.N rounds
// starts childBenchRound runs of each kind (alternating which goes first)
// and waits for them. cost-ratio is the time per parent over the time per
// one-activity workflow.
func BenchmarkChildVsActivity(b *testing.B) {
	e := benchEngine(b)
	oneActivity := harvest.WorkflowRef[string, string]("one_activity")
	require.NoError(b, e.reg.Register(harvest.NewWorkflow("one_child", func(ctx harvest.Context, in string) (string, error) {
		return oneActivity.Execute(ctx, in).Get(ctx)
	})))
	var spent [2]time.Duration
	kinds := [2]string{"one_activity", "one_child"}
	b.ResetTimer()
	for i := range b.N {
		for j := range kinds {
			k := (i + j) % 2
			spent[k] += runRound(b, e, kinds[k])
		}
	}
	runs := float64(b.N * childBenchRound)
	b.ReportMetric(runs/spent[0].Seconds(), "activity-workflows/s")
	b.ReportMetric(runs/spent[1].Seconds(), "parents/s")
	b.ReportMetric(spent[1].Seconds()/spent[0].Seconds(), "cost-ratio")
}

// runRound starts childBenchRound runs of workflow and waits for all.
func runRound(b *testing.B, e *Engine, workflow string) time.Duration {
	began := time.Now()
	ids := make([]uuid.UUID, 0, childBenchRound)
	for range childBenchRound {
		r, err := e.StartWorkflow(context.Background(), StartRequest{WorkflowName: workflow, Input: []byte(`"x"`)})
		require.NoError(b, err)
		ids = append(ids, r.ExecutionID)
	}
	for _, id := range ids {
		x, err := e.Result(context.Background(), id, time.Minute)
		require.NoError(b, err)
		require.Equal(b, StateCompleted, x.State, "%s", x.Error)
	}
	return time.Since(began)
}

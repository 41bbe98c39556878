package api

import (
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
)

// pairTasks counts the runs of pairWF's code: the first iterates its map
// in ascending key order, every later one (the replays) descending, as two
// iterations of a Go map may.
var pairTasks atomic.Int64

var (
	shout  = harvest.NewActivity("shout", func(_ *harvest.ActivityContext, s string) (string, error) { return strings.ToUpper(s), nil })
	pairWF = harvest.NewWorkflow("pair", func(ctx harvest.Context, in map[string]bool) (map[string]string, error) {
		keys := slices.Sorted(maps.Keys(in))
		if pairTasks.Add(1) > 1 {
			slices.Reverse(keys)
		}
		futures := map[string]harvest.Future[string]{}
		for _, k := range keys {
			futures[k] = shout.Execute(ctx, k)
		}
		out := map[string]string{}
		for _, k := range keys {
			v, err := futures[k].Get(ctx)
			if err != nil {
				return nil, err
			}
			out[k] = v
		}
		return out, nil
	})
)

func TestFanOutInAnotherOrderFailsTheTaskVisibly(t *testing.T) {
	t.Parallel()
	pairTasks.Store(0) // a first task again under -count=N
	b := setup(t)
	run := b.do(t, "POST", "/workflows/pair/start", map[string]any{"input": map[string]bool{"a": true, "b": true}})
	require.Equal(t, http.StatusCreated, run.Status, "%s", run.Raw)
	id := run.Body["execution_id"].(string)

	var lastError string
	require.Eventually(t, func() bool {
		d := b.do(t, "GET", "/workflows/"+id, nil)
		lastError, _ = d.Body["execution"].(map[string]any)["last_error"].(string)
		return lastError != ""
	}, 20*time.Second, 10*time.Millisecond, "no task failure in describe")
	require.Contains(t, lastError, "non-determinism at event 1")
	require.Contains(t, lastError, `argument "input" differs`)
	require.Regexp(t, `history digest [0-9a-f]{16}, code digest [0-9a-f]{16}`, lastError)

	d := b.do(t, "GET", "/workflows/"+id, nil)
	require.Equal(t, "RUNNING", d.Body["execution"].(map[string]any)["state"], "the run is not completed with results paired to the wrong keys")
	h := b.do(t, "GET", "/workflows/"+id+"/history", nil)
	for _, ev := range h.Body["events"].([]any) {
		require.NotContains(t, []string{"WorkflowCompleted", "WorkflowFailed"}, ev.(map[string]any)["type"], "history is never rewritten or closed")
	}
}

package wftask

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
)

// blockedWF waits for a signal it never gets: a live run parked in its
// first step.
var blockedWF = harvest.NewWorkflow("blocked", func(ctx harvest.Context, _ string) (string, error) {
	return harvest.NewSignal[string]("go").Receive(ctx)
})

// TestStateCacheBounds checks the LRU on live runs of a blocked workflow.
func TestStateCacheBounds(t *testing.T) {
	t.Parallel()
	reg := harvest.NewRegistry()
	require.NoError(t, reg.Register(blockedWF))
	live := func(t *testing.T, n int) *liveRun {
		started, err := json.Marshal(harvest.WorkflowStartedData{WorkflowName: "blocked", Input: json.RawMessage(`""`)})
		require.NoError(t, err)
		task := harvest.WorkflowTask{Info: harvest.WorkflowInfo{WorkflowName: "blocked"},
			History: []harvest.Event{{Type: harvest.EventWorkflowStarted, Data: started}}}
		run, _, err := reg.StartRun(context.Background(), task, zerolog.Nop())
		require.NoError(t, err)
		t.Cleanup(run.Stop)
		return &liveRun{id: uuid.New(), run: run, next: int64(n), keep: true}
	}
	size := live(t, 0).run.Size()
	for _, tc := range []struct {
		name       string
		entries    int
		bytes      int64
		wantCached []bool // of runs a, b, c put in that order, a used again after b
	}{
		{"ByEntries", 2, 1 << 20, []bool{true, false, true}},
		{"ByBytes", 10, 2 * size, []bool{true, false, true}},
		{"Off", 0, 1 << 20, []bool{false, false, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newStateCache(tc.entries, tc.bytes)
			runs := []*liveRun{live(t, 1), live(t, 1), live(t, 1)}
			c.put(runs[0])
			c.put(runs[1])
			if got := c.take(runs[0].id); got != nil {
				c.put(got) // a is now the most recently used
			}
			c.put(runs[2])
			for i, lr := range runs {
				_, ok := c.nextOf(lr.id)
				require.Equal(t, tc.wantCached[i], ok, "run %d cached", i)
				_, err := lr.run.Advance(context.Background(), nil)
				if !ok {
					require.ErrorIs(t, err, harvest.ErrStaleRun, "an evicted run is stopped")
				}
			}
		})
	}

	t.Run("NewerRunWins", func(t *testing.T) {
		t.Parallel()
		c := newStateCache(10, 1<<20)
		older, newer := live(t, 3), live(t, 5)
		older.id = newer.id
		c.put(newer)
		c.put(older)
		next, ok := c.nextOf(newer.id)
		require.True(t, ok)
		require.Equal(t, int64(5), next)
	})
}

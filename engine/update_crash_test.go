package engine

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/loop"
)

// updateCrashPoints are the step boundaries of an update: its acceptance
// (the signal's commit), and the workflow tasks that run its handler and
// record its answer.
var updateCrashPoints = []loop.CrashPoint{crashSignal, crashLoaded, crashRan, crashBeforeCommit, crashCommitted}

// updateCrashTimes is how many times an update surely meets p: twice for
// the points inside a workflow task (the task that runs the handler, and
// the one that records its answer, which the activity's completion may
// run in its own batch, past the workflow loop's committed point), once
// for the others.
func updateCrashTimes(p loop.CrashPoint) int32 {
	switch p {
	case crashLoaded, crashRan, crashBeforeCommit:
		return 2
	}
	return 1
}

// TestUpdateCrashPoints stops the engine at each boundary of an update,
// the first and (for a workflow task's) the second time it meets it,
// while the caller waits; the caller's retry on a successor gets the
// answer, and the run applied the update once: one handler activity, one
// UpdateCompleted.
func TestUpdateCrashPoints(t *testing.T) {
	t.Parallel()
	for _, p := range updateCrashPoints {
		for n := int32(1); n <= updateCrashTimes(p); n++ {
			t.Run(fmt.Sprintf("%s#%d", p, n), func(t *testing.T) {
				t.Parallel()
				b := setup(t)
				require.NoError(t, b.reg.Register(twice, tallyWF))
				hit, frozen := make(chan struct{}), make(chan struct{})
				var armed atomic.Bool
				nth := crashNth(p, n, hit, frozen)
				e1 := b.engine(t, func(c *Config) {
					c.crashHook = func(ctx context.Context, at loop.CrashPoint) error {
						if !armed.Load() {
							return nil
						}
						return nth(ctx, at)
					}
				})
				run := start(t, e1, StartRequest{WorkflowName: tallyWF.Name(), Input: raw(t, false)})
				eventually(t, "the run's first task ran", func() bool {
					var ran bool
					require.NoError(t, b.pool.QueryRow(ctxT(t), `SELECT wf_task_due_at IS NULL FROM harvest_executions
						 WHERE execution_id = $1`, run.ExecutionID).Scan(&ran))
					return ran
				})
				armed.Store(true)
				go func() { _, _ = sendUpdate(t, e1, run.ExecutionID, "crashed", 5) }() // its answer dies with e1
				select {
				case <-hit:
				case <-time.After(20 * time.Second):
					t.Fatalf("the update never met %s %d times", p, n)
				}
				crash(e1)
				close(frozen)

				e2 := b.engine(t)
				res, err := sendUpdate(t, e2, run.ExecutionID, "crashed", 5)
				require.NoError(t, err)
				require.True(t, res.Completed)
				require.JSONEq(t, "10", string(res.Output))
				again, err := sendUpdate(t, e2, run.ExecutionID, "crashed", 5)
				require.NoError(t, err)
				require.Equal(t, res, again)
				require.Equal(t, 1, countType(t, b, run.ExecutionID, harvest.EventUpdateCompleted))
				require.Equal(t, 1, countType(t, b, run.ExecutionID, harvest.EventActivityScheduled), "the handler ran once")
				require.Equal(t, 1, countType(t, b, run.ExecutionID, harvest.EventActivityCompleted))
			})
		}
	}
}

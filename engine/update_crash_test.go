package engine

import (
	"fmt"
	"testing"

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
// UpdateCompleted. The update is sent to a running run, and as an
// update-with-start (whose acceptance comes after its start's commit).
func TestUpdateCrashPoints(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"Update", "WithStart"} {
		for _, p := range updateCrashPoints {
			for n := int32(1); n <= updateCrashTimes(p); n++ {
				t.Run(fmt.Sprintf("%s/%s#%d", mode, p, n), func(t *testing.T) {
					t.Parallel()
					updateCrash(t, mode == "WithStart", p, n)
				})
			}
		}
	}
}

// updateCrash is one case of TestUpdateCrashPoints: the n-th meeting of p.
func updateCrash(t *testing.T, withStart bool, p loop.CrashPoint, n int32) {
	b := setup(t)
	require.NoError(t, b.reg.Register(twice, tallyWF))
	rig := newCrashRig(t, b, nth(p, n))
	e1 := rig.e
	send := func(e *Engine) (UpdateResult, error) {
		res, err := updateWithStart(t, e, "crashed-cart", "crashed", 5, "")
		return res.Update, err
	}
	if !withStart {
		run := startTally(t, b, e1)
		send = func(e *Engine) (UpdateResult, error) { return sendUpdate(t, e, run.ExecutionID, "crashed", 5) }
	}
	rig.arm()
	go func() { _, _ = send(e1) }() // its answer dies with e1
	rig.crashAtHit(t, fmt.Sprintf("%s %d times", p, n))

	e2 := b.engine(t)
	res, err := send(e2)
	require.NoError(t, err)
	require.True(t, res.Completed)
	require.JSONEq(t, "10", string(res.Output))
	again, err := send(e2)
	require.NoError(t, err)
	require.Equal(t, res, again)
	require.Equal(t, 1, countRuns(t, b, tallyWF.Name()), "one run")
	require.Equal(t, 1, countType(t, b, res.ExecutionID, harvest.EventUpdateCompleted))
	require.Equal(t, 1, countType(t, b, res.ExecutionID, harvest.EventActivityScheduled), "the handler ran once")
	require.Equal(t, 1, countType(t, b, res.ExecutionID, harvest.EventActivityCompleted))
}

// startTally starts a tally run and waits for its first task to run.
func startTally(t *testing.T, b *testBundle, e *Engine) StartResult {
	t.Helper()
	run := start(t, e, StartRequest{WorkflowName: tallyWF.Name(), Input: raw(t, false)})
	eventually(t, "the run's first task ran", func() bool {
		var ran bool
		require.NoError(t, b.pool.QueryRow(ctxT(t), `SELECT wf_task_due_at IS NULL FROM harvest_executions
			 WHERE execution_id = $1`, run.ExecutionID).Scan(&ran))
		return ran
	})
	return run
}

// countRuns counts the runs of the workflow name.
func countRuns(t *testing.T, b *testBundle, name string) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(ctxT(t), `SELECT count(*) FROM harvest_executions WHERE workflow_name = $1`, name).Scan(&n))
	return n
}

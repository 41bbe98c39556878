package engine

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/loop"
	"github.com/harvestd/harvest/internal/batchop"
)

// batchCrashPoints are the step boundaries of a batch job: its items
// (a signal job's signals: between items of a page), and the workflow
// tasks that record each page's listing and counts.
var batchCrashPoints = []loop.CrashPoint{crashSignal, crashLoaded, crashRan, crashBeforeCommit, crashCommitted}

// batchCrashTimes are the meetings of p a test stops at, each surely
// met: a signal batch commits at least once per page (its items may share
// one group commit), so the first and the third are met (the third in
// the second page at the latest); of the workflow tasks, the first and
// the fourth (a page's listing, then a later page's counts).
func batchCrashTimes(p loop.CrashPoint) []int32 {
	if p == crashSignal {
		return []int32{1, 3}
	}
	return []int32{1, 4}
}

// TestBatchCrashPoints stops the engine at each boundary of a signal
// job of 12 runs in pages of 4 (a continue-as-new after two), while it
// runs; a successor finishes the job, every run got the signal once, and
// the job's counts are exact: 12 matched, 12 done.
func TestBatchCrashPoints(t *testing.T) {
	t.Parallel()
	for _, p := range batchCrashPoints {
		for _, n := range batchCrashTimes(p) {
			t.Run(fmt.Sprintf("%s#%d", p, n), func(t *testing.T) {
				t.Parallel()
				batchCrash(t, p, n)
			})
		}
	}
}

// batchCrash is one case of TestBatchCrashPoints: the n-th meeting of p.
func batchCrash(t *testing.T, p loop.CrashPoint, n int32) {
	b := setup(t)
	require.NoError(t, b.reg.Register(twice, tallyWF))
	rig := newCrashRig(t, b, nth(p, n))
	e1 := rig.e
	ids := tallies(t, e1, 12)
	job := batchop.Job{Operation: batchop.Signal, Filter: batchop.Filter{WorkflowName: tallyWF.Name(), States: []string{StateRunning}},
		SignalName: itemSig.Name(), SignalPayload: raw(t, "batch"), Rate: 1000, Size: 4, Pages: 2}
	rig.arm()
	go func() {
		_, _ = e1.StartWorkflow(ctxT(t), StartRequest{WorkflowName: batchop.WorkflowName, IdempotencyKey: "crashed", Input: raw(t, job)})
	}()
	rig.crashAtHit(t, fmt.Sprintf("%s %d times", p, n))

	e2 := b.engine(t)
	jobID := startBatch(t, e2, "crashed", job).ExecutionID
	require.Equal(t, batchop.Progress{Matched: 12, Done: 12, Pages: 3, Finished: true}, batchResult(t, e2, jobID))
	for _, id := range ids {
		require.Equal(t, 1, countType(t, b, id, harvest.EventSignalReceived), "run %s got the signal once", id)
	}
	var jobs int
	require.NoError(t, b.pool.QueryRow(ctxT(t), `SELECT count(*) FROM harvest_executions WHERE idempotency_key = 'crashed'`).Scan(&jobs))
	require.Equal(t, 1, jobs, "one job")
}

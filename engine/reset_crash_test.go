package engine

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
)

// TestResetCrashPoints stops the engine as a reset of a running order
// commits (crashReset: the new run, its claim and the old run's close
// written, nothing committed), and after its commit with the answer lost;
// the caller's retry on a successor makes or finds one new run, the old
// run is terminated once, and the charge re-executed after the point is
// charged once.
func TestResetCrashPoints(t *testing.T) {
	t.Parallel()
	for _, committed := range []bool{false, true} {
		name := string(crashReset)
		if committed {
			name = "answer_lost"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var rig *crashRig
			b := setupResetWith(t, func(tb *testBundle) *Engine {
				rig = newCrashRig(t, tb, once(crashReset))
				return rig.e
			})
			id := b.order(t)
			req := ResetRequest{ExecutionID: id, EventID: 1, Reason: "retry the charge", IdempotencyKey: "reset-1"}
			var first ResetResult
			if committed {
				var err error
				first, err = b.e.Reset(ctxT(t), req)
				require.NoError(t, err)
				crash(b.e)
			} else {
				rig.arm()
				go func() { _, _ = b.e.Reset(ctxT(t), req) }()
				rig.crashAtHit(t, name)
			}
			b.e = b.engine(t)
			res, err := b.e.Reset(ctxT(t), req)
			require.NoError(t, err)
			require.Equal(t, !committed, res.Newly, "the retry makes the reset only when the first did not commit")
			if committed {
				require.Equal(t, first.ExecutionID, res.ExecutionID)
			}
			b.ship(t, b.e, id, "ship-1")
			_, out := b.outcome(t, res.ExecutionID)
			require.Equal(t, "ch_1/label-ch_1", out)
			require.Equal(t, 2, b.chainRuns(t, id), "one new run")
			require.Equal(t, 1, count(eventTypes(t, b.pool, id), harvest.EventWorkflowTerminated))
			_, charged := b.stripe.counts()
			require.Equal(t, 1, charged)
		})
	}
}

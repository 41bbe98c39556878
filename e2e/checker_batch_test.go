package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCheckBatches runs the checker on a correct batch job (a race it
// signalled once and that completed), then on copies with one planted
// violation each.
func TestCheckBatches(t *testing.T) {
	cases := []struct {
		name     string
		progress map[string]any
		twice    bool
		want     string
	}{
		{"Clean", map[string]any{"matched": 1, "done": 1}, false, ""},
		{"AnItemTwice", map[string]any{"matched": 1, "done": 1}, true, "2 SignalReceived"},
		{"AFailedItem", map[string]any{"matched": 1, "failed": 1, "last_error": "refused"}, false, "failed 1"},
		{"CountsThatDoNotAddUp", map[string]any{"matched": 2, "done": 1}, false, "matched 2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			dsn, conn := plantDB(ctx, t)
			job, race := newExecID(0), newExecID(0)
			require.NoError(t, plantExecution(ctx, conn, job, wfBatch, "wf-batch", "batch-1", "COMPLETED"))
			require.NoError(t, plantOutput(ctx, conn, job, tc.progress))
			require.NoError(t, plantExecution(ctx, conn, race, wfRace, "wf-race", "race-1-0", "COMPLETED"))
			key := batchKeyPrefix + job + ":" + race
			for range map[bool]int{false: 1, true: 2}[tc.twice] {
				require.NoError(t, plantEvent(ctx, conn, race, "SignalReceived", map[string]any{"signal_name": sigApproved, "idempotency_key": key}))
			}
			ops := []*Op{
				{ID: 1, Kind: KindStart, Workflow: wfRace, Key: "race-1-0", ExecID: race, OK: true, Status: 201, Fresh: boolp(true)},
				{ID: 2, Kind: KindBatchJob, Workflow: wfBatch, Key: "batch-1", ExecID: job, OK: true, Status: 201},
			}
			st, err := ReadDB(ctx, map[uint16]string{0: dsn})
			require.NoError(t, err)
			vs := Check(ops, st)
			for _, v := range vs {
				t.Logf("violation [%s] %s", v.Check, v.Detail)
			}
			if tc.want == "" {
				require.Empty(t, vs)
				require.Equal(t, "batch jobs: 1 answered, 1 completed: 1 items matched, 1 done, 0 skipped, 0 failed; 1 runs got a job's signal",
					BatchStats(ops, st))
				return
			}
			require.True(t, reported(vs, CheckBatchOnce, tc.want), "want a %q violation saying %q", CheckBatchOnce, tc.want)
		})
	}
}

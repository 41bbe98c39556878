package engine

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/loop"
)

// handOverPoints are the crash points a continue-as-new meets: the
// hand-over is one workflow task's transaction, and a signal to the old
// run's id goes through a signal batch.
var handOverPoints = []loop.CrashPoint{crashLoaded, crashRan, crashBeforeCommit, crashCommitted, crashSignal}

// A crash at any point of the hand-over leaves one new run, and a signal
// sent to the old run's id during it (and retried with its key to the new
// id) is received once: "carry"'s first run consumes "a" and carries "b"
// and "c", its second receives them and "d".
func TestContinueAsNewCrashPoints(t *testing.T) {
	t.Parallel()
	for _, p := range handOverPoints {
		t.Run(string(p), func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			g := b.registerCarry(t)
			rig := newCrashRig(t, b, once(p))
			e1 := rig.e
			run := start(t, e1, StartRequest{WorkflowName: "carry", Input: raw(t, 0)})
			g.waitEntered(t)
			for _, s := range []string{"a", "b", "c"} {
				signal(t, e1, carrySignal(t, run.ExecutionID, s))
			}
			eventually(t, "the signals' tasks ran", func() bool { return !taskDue(t, b, run.ExecutionID) })
			if p != crashSignal {
				rig.arm() // the next workflow task is the hand-over
			}
			for range 4 {
				g.pass <- struct{}{} // the attempt, and one per retry after the crash
			}
			if p == crashSignal {
				waitLinks(t, e1, run.ExecutionID, 2)
				rig.arm() // the next signal batch carries "d" to the new run
			}
			sent := make(chan struct{})
			go func() {
				defer close(sent)
				_, _ = e1.Signal(context.Background(), carrySignal(t, run.ExecutionID, "d"))
			}()
			rig.crashAtHit(t, "the hand-over at "+string(p))
			<-sent

			e2 := b.engine(t)
			runs := waitLinks(t, e2, run.ExecutionID, 2)
			signal(t, e2, carrySignal(t, runs[1].ExecutionID, "d")) // the client's keyed retry, to the new id
			x := waitClosed(t, e2, runs[1].ExecutionID)
			require.Equal(t, StateCompleted, x.State)
			var got []string
			require.NoError(t, json.Unmarshal(x.Output, &got))
			slices.Sort(got)
			require.Equal(t, []string{"b", "c", "d"}, got, "no signal lost or doubled")
			require.Equal(t, 2, runsOfID(t, b, run.WorkflowID), "one new run")
			for _, r := range chainRuns(t, e2, run.ExecutionID) {
				requireSoundRun(t, b, r.ExecutionID)
			}
			require.Equal(t, 1, keyRows(t, b, "kd"), "one ledger row of the retried key")
		})
	}
}

func carrySignal(t *testing.T, id uuid.UUID, s string) SignalRequest {
	return SignalRequest{ExecutionID: id, SignalName: goSignal.Name(), Payload: raw(t, s), IdempotencyKey: "k" + s}
}

// taskDue reports whether the run has a workflow task due.
func taskDue(t *testing.T, b *testBundle, id uuid.UUID) bool {
	var due bool
	require.NoError(t, b.pool.QueryRow(context.Background(),
		`SELECT wf_task_due_at IS NOT NULL FROM harvest_executions WHERE execution_id = $1`, id).Scan(&due))
	return due
}

// runsOfID counts the runs of any workflow with workflow id.
func runsOfID(t *testing.T, b *testBundle, workflowID string) int {
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(),
		`SELECT count(*) FROM harvest_executions WHERE workflow_id = $1`, workflowID).Scan(&n))
	return n
}

// keyRows counts the signal ledger rows of a key.
func keyRows(t *testing.T, b *testBundle, key string) int {
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(),
		`SELECT count(*) FROM harvest_signals WHERE idempotency_key = $1`, key).Scan(&n))
	return n
}

// requireSoundRun checks one run of a chain: dense event ids, one
// WorkflowStarted first, one close last, and each signal key once.
func requireSoundRun(t *testing.T, b *testBundle, id uuid.UUID) {
	t.Helper()
	var n, maxID int64
	require.NoError(t, b.pool.QueryRow(context.Background(),
		`SELECT count(*), max(event_id) FROM harvest_events WHERE execution_id = $1`, id).Scan(&n, &maxID))
	require.Equal(t, n-1, maxID, "event ids are dense")
	types := eventTypes(t, b.pool, id)
	require.Equal(t, string(harvest.EventWorkflowStarted), types[0])
	require.Equal(t, 1, count(types, harvest.EventWorkflowStarted))
	closes := 0
	for _, s := range types {
		if harvest.EventType(s).IsTerminal() {
			closes++
		}
	}
	require.Equal(t, 1, closes)
	require.True(t, harvest.EventType(types[len(types)-1]).IsTerminal())
	var doubled int
	require.NoError(t, b.pool.QueryRow(context.Background(), `
		SELECT count(*) FROM (
			SELECT data->>'idempotency_key' FROM harvest_events
			 WHERE execution_id = $1 AND event_type = 'SignalReceived'
			 GROUP BY 1 HAVING count(*) > 1) d`, id).Scan(&doubled))
	require.Zero(t, doubled, "a signal was doubled in %s: %v", id, types)
}

package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// TestCheckResets runs the checker on a correct reset (an order reset to
// its first task, answered twice: a re-delivery; its charge run again
// under the first run's key; approved and completed), then on copies with
// one planted violation each.
func TestCheckResets(t *testing.T) {
	cases := []struct {
		name, want string
		plant      func(ctx context.Context, t *testing.T, conn *pgx.Conn, w *resetWorld)
	}{
		{"Clean", "", nil},
		{"CleanWithTheApprovalsAnswerLost", "", func(ctx context.Context, t *testing.T, conn *pgx.Conn, w *resetWorld) {
			w.firstAnswerLost = true
		}},
		{"AnApprovalReceivedTwice", "has 2 SignalReceived", func(ctx context.Context, t *testing.T, conn *pgx.Conn, w *resetWorld) {
			w.twice = true
		}},
		{"AChargeUnderANewKey", `has key "hvk_new"`, func(ctx context.Context, t *testing.T, conn *pgx.Conn, w *resetWorld) {
			w.charge = "hvk_new"
		}},
		{"TwoRunsForOneKey", "2 reset runs for 1 reset keys", func(ctx context.Context, t *testing.T, conn *pgx.Conn, w *resetWorld) {
			w.second = true
		}},
		{"AnswersThatDisagree", "answered with 2 runs", func(ctx context.Context, t *testing.T, conn *pgx.Conn, w *resetWorld) {
			w.otherAnswer = true
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			dsn, conn := plantDB(ctx, t)
			w := &resetWorld{charge: "hvk_charge"}
			if tc.plant != nil {
				tc.plant(ctx, t, conn, w)
			}
			ops := w.plant(ctx, t, conn)
			st, err := ReadDB(ctx, map[uint16]string{0: dsn})
			require.NoError(t, err)
			vs := Check(ops, st)
			for _, v := range vs {
				t.Logf("violation [%s] %s", v.Check, v.Detail)
			}
			if tc.want == "" {
				require.Empty(t, vs)
				require.Equal(t, "resets: 2 sent (1 re-deliveries), 2 answered, 1 reset runs; 1 of their activities carry their source's key",
					ResetStats(ops, st))
				return
			}
			check := CheckResetOnce
			if tc.name == "AnApprovalReceivedTwice" {
				check = CheckSignalOnce
			}
			require.True(t, reported(vs, check, tc.want), "want a %q violation saying %q", check, tc.want)
		})
	}
}

// resetWorld is a reset order as a cluster leaves it, with the planted
// faults: the reset run's charge key, a second reset run, an answer
// naming another run.
type resetWorld struct {
	charge                               string
	second, otherAnswer, firstAnswerLost bool
	twice                                bool
}

func (w *resetWorld) plant(ctx context.Context, t *testing.T, conn *pgx.Conn) []*Op {
	first, reset := newExecID(0), newExecID(0)
	require.NoError(t, plantExecution(ctx, conn, first, wfOrder, "wf-ordr-1", "ordr-1", "TERMINATED"))
	require.NoError(t, plantEvent(ctx, conn, first, "ActivityScheduled", map[string]any{"activity_id": "1", "idempotency_key": "hvk_charge"}))
	require.NoError(t, plantEvent(ctx, conn, first, "ActivityCompleted", map[string]any{"activity_id": "1"}))
	require.NoError(t, plantEvent(ctx, conn, first, "WorkflowTerminated", map[string]any{"replaced_by": reset}))
	w.plantReset(ctx, t, conn, first, reset, first)
	require.NoError(t, plantEvent(ctx, conn, reset, "ActivityScheduled", map[string]any{"activity_id": "1", "idempotency_key": w.charge}))
	require.NoError(t, plantEvent(ctx, conn, reset, "ActivityCompleted", map[string]any{"activity_id": "1"}))
	require.NoError(t, plantEvent(ctx, conn, reset, "SignalReceived", map[string]any{"signal_name": sigApproved, "idempotency_key": "ordr-1-approved"}))
	if w.twice {
		require.NoError(t, plantEvent(ctx, conn, reset, "SignalReceived", map[string]any{"signal_name": sigApproved, "idempotency_key": "ordr-1-approved"}))
	}
	require.NoError(t, plantEvent(ctx, conn, reset, "WorkflowCompleted", map[string]any{}))
	answer := reset
	if w.second {
		other := newExecID(0)
		w.plantReset(ctx, t, conn, first, other, "")
		require.NoError(t, plantEvent(ctx, conn, other, "WorkflowTerminated", map[string]any{}))
	}
	if w.otherAnswer {
		answer = first
	}
	ops := []*Op{
		{ID: 1, Kind: KindStart, Workflow: wfOrder, Key: "ordr-1", ExecID: first, OK: true, Status: 201, Fresh: boolp(true)},
		{ID: 2, Kind: KindReset, Workflow: wfOrder, Key: "ordr-1-reset", Target: first, ExecID: reset, OK: true, Status: 200},
		{ID: 3, Kind: KindReset, Workflow: wfOrder, Key: "ordr-1-reset", Target: first, ExecID: answer, OK: true, Status: 200, Dup: true},
		{ID: 4, Kind: KindSignal, Workflow: wfOrder, Key: "ordr-1-approved", Target: first, ExecID: first, Current: reset, OK: true, Status: 200,
			Delivered: boolp(true)},
		// A duplicate's answer names no current run.
		{ID: 5, Kind: KindSignal, Workflow: wfOrder, Key: "ordr-1-approved", Target: first, ExecID: first, OK: true, Status: 200,
			Delivered: boolp(false), Dup: true},
	}
	if w.firstAnswerLost {
		// The delivery's answer was lost: the retry found the key.
		ops[3].Current, ops[3].Delivered = "", boolp(false)
	}
	return ops
}

// plantReset plants run id, a reset of first in its chain, replacing
// replaced ("": none) and completed later.
func (w *resetWorld) plantReset(ctx context.Context, t *testing.T, conn *pgx.Conn, first, id, replaced string) {
	state := "COMPLETED"
	if replaced == "" {
		state = "TERMINATED"
	}
	_, err := conn.Exec(ctx, `
		INSERT INTO harvest_executions (execution_id, workflow_name, workflow_id, state, holds_slot, next_event_id, chain_id, continued_from)
		VALUES ($1, $2, 'wf-ordr-1', $3, false, 1, $4, nullif($5, '')::uuid)`, id, wfOrder, state, first, replaced)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `INSERT INTO harvest_events (execution_id, event_id, event_type, data)
		VALUES ($1, 0, 'WorkflowStarted', jsonb_build_object('workflow_name', $2::text, 'reset_from', $3::text, 'key_base', $3::text))`,
		id, wfOrder, first)
	require.NoError(t, err)
	if replaced != "" {
		_, err := conn.Exec(ctx, `UPDATE harvest_executions SET continued_to = $2 WHERE execution_id = $1`, replaced, id)
		require.NoError(t, err)
	}
}

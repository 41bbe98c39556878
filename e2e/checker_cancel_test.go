package e2e

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// cancelWorld is a synthetic run for the cancel checks: one shard, orders
// planted with their histories, and the ops a client recorded.
type cancelWorld struct {
	t    *testing.T
	ctx  context.Context
	dsn  string
	conn *pgx.Conn
	ops  []*Op
}

// plannedEvent is an event an order's history gets, its activity ids and
// keys filled in by order.
type plannedEvent struct {
	typ  string
	data map[string]any
}

var (
	evCharge     = plannedEvent{"ActivityScheduled", map[string]any{"activity_id": "1", "name": actCharge}}
	evChargeDone = plannedEvent{"ActivityCompleted", map[string]any{"activity_id": "1"}}
	evRefund     = plannedEvent{"ActivityScheduled", map[string]any{"activity_id": "2", "name": actRefund}}
	evRefundDone = plannedEvent{"ActivityCompleted", map[string]any{"activity_id": "2"}}
	evRefund2    = plannedEvent{"ActivityScheduled", map[string]any{"activity_id": "3", "name": actRefund}}
	evTimerFired = plannedEvent{"TimerFired", map[string]any{"timer_id": "t1"}}
	evCancelReq  = plannedEvent{"WorkflowCancelRequested", map[string]any{"reason": "e2e"}}
	evCancelled  = plannedEvent{"WorkflowCancelled", map[string]any{}}
	evCompleted  = plannedEvent{"WorkflowCompleted", map[string]any{}}
	evFailed     = plannedEvent{"WorkflowFailed", map[string]any{}}
)

// order plants an order in state with events after its WorkflowStarted,
// and records its answered start; it returns the execution id.
func (w *cancelWorld) order(state string, events ...plannedEvent) string {
	w.t.Helper()
	id := newExecID(0)
	require.NoError(w.t, plantExecution(w.ctx, w.conn, id, wfOrder, "wf-"+id, "k-"+id, state))
	for _, e := range events {
		data := map[string]any{}
		for k, v := range e.data {
			data[k] = v
		}
		if e.typ == "ActivityScheduled" {
			data["idempotency_key"] = id + "/" + data["activity_id"].(string)
		}
		require.NoError(w.t, plantEvent(w.ctx, w.conn, id, e.typ, data))
	}
	w.add(Op{Kind: KindStart, Workflow: wfOrder, Key: "k-" + id, ExecID: id, OK: true, Status: http.StatusCreated, Fresh: boolp(true)})
	return id
}

func (w *cancelWorld) add(o Op) {
	o.ID = int64(len(w.ops) + 1)
	o.Begin, o.End = time.Now(), time.Now()
	if o.Attempts == nil {
		o.Attempts = []Attempt{{Node: 1, Status: o.Status}}
	}
	w.ops = append(w.ops, &o)
}

func cancelOp(target string) Op {
	return Op{Kind: KindCancel, Workflow: wfOrder, Key: target + "-cancel", Target: target}
}

// cancel200 records a 200 answer to a cancel of target.
func (w *cancelWorld) cancel200(target string, newly bool) {
	o := cancelOp(target)
	o.OK, o.Status, o.ExecID, o.State = true, http.StatusOK, target, "RUNNING"
	o.CancelRequested, o.NewlyCancelled = boolp(true), boolp(newly)
	w.add(o)
}

// cancel409 records a 409 execution_terminal answer naming state, after
// the given failed attempts.
func (w *cancelWorld) cancel409(target, state string, failed ...Attempt) {
	o := cancelOp(target)
	o.Status, o.Code, o.ExecID, o.State = http.StatusConflict, codeTerminal, target, state
	o.Attempts = append(failed, Attempt{Node: 1, Status: http.StatusConflict})
	w.add(o)
}

var lostAttempt = Attempt{Node: 2, Err: "context deadline exceeded"}

// TestCheckCancels runs the cancel checks on synthetic runs: the clean
// ones must not violate anything, each broken one must report exactly its
// violation.
func TestCheckCancels(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		build func(w *cancelWorld)
		want  map[string]int
	}{
		// Clean runs.
		{"cancelled while waiting refunds once", func(w *cancelWorld) {
			id := w.order("CANCELLED", evCharge, evChargeDone, evCancelReq, evRefund, evRefundDone, evCancelled)
			w.cancel200(id, true)
			w.cancel200(id, false) // a re-delivery
			w.cancel409(id, "CANCELLED")
		}, nil},
		{"a charge that never completed is not refunded", func(w *cancelWorld) {
			id := w.order("CANCELLED", evCharge, evCancelReq, evCancelled)
			w.cancel200(id, true)
		}, nil},
		{"a charge completed after the request is refunded", func(w *cancelWorld) {
			id := w.order("CANCELLED", evCharge, evCancelReq, evChargeDone, evRefund, evRefundDone, evCancelled)
			w.cancel200(id, true)
		}, nil},
		{"a cancel after the end is a 409 and writes nothing", func(w *cancelWorld) {
			id := w.order("COMPLETED", evCharge, evChargeDone, evTimerFired, evCompleted)
			w.cancel409(id, "COMPLETED")
		}, nil},
		{"a cancel after the last wait lets it complete", func(w *cancelWorld) {
			id := w.order("COMPLETED", evCharge, evChargeDone, evTimerFired, evCancelReq, evCompleted)
			w.cancel200(id, true)
		}, nil},
		{"a lost answer then a 409 may have recorded the request", func(w *cancelWorld) {
			id := w.order("CANCELLED", evCharge, evChargeDone, evCancelReq, evRefund, evRefundDone, evCancelled)
			w.cancel409(id, "CANCELLED", lostAttempt)
		}, nil},
		{"a lost answer then a 409 may have recorded nothing", func(w *cancelWorld) {
			id := w.order("COMPLETED", evCharge, evChargeDone, evTimerFired, evCompleted)
			w.cancel409(id, "COMPLETED", lostAttempt)
		}, nil},

		// Answers.
		{"any other 4xx", func(w *cancelWorld) {
			id := w.order("COMPLETED", evCharge, evChargeDone, evTimerFired, evCompleted)
			o := cancelOp(id)
			o.Status, o.Code, o.Err = http.StatusNotFound, "not_found", `{"code":"not_found"}`
			w.add(o)
		}, map[string]int{CheckCancelAnswer: 1}},
		{"a 200 that is not RUNNING", func(w *cancelWorld) {
			id := w.order("CANCELLED", evCharge, evCancelReq, evCancelled)
			w.cancel200(id, true)
			w.ops[len(w.ops)-1].State = "CANCELLED"
		}, map[string]int{CheckCancelAnswer: 1}},
		{"a 409 naming another state than the run's", func(w *cancelWorld) {
			id := w.order("COMPLETED", evCharge, evChargeDone, evTimerFired, evCompleted)
			w.cancel409(id, "CANCELLED")
		}, map[string]int{CheckCancelAnswer: 1}},

		// Exactly one request.
		{"newly_cancelled twice", func(w *cancelWorld) {
			id := w.order("CANCELLED", evCharge, evCancelReq, evCancelled)
			w.cancel200(id, true)
			w.cancel200(id, true)
		}, map[string]int{CheckCancelOnce: 1}},
		{"two requests in history", func(w *cancelWorld) {
			id := w.order("CANCELLED", evCharge, evCancelReq, evCancelReq, evCancelled)
			w.cancel200(id, true)
		}, map[string]int{CheckCancelOnce: 1}},
		{"a request answered and not recorded", func(w *cancelWorld) {
			id := w.order("COMPLETED", evCharge, evChargeDone, evTimerFired, evCompleted)
			w.cancel200(id, true)
		}, map[string]int{CheckCancelOnce: 1}},
		{"every answer 409 and a request recorded", func(w *cancelWorld) {
			id := w.order("CANCELLED", evCharge, evCancelReq, evCancelled)
			w.cancel409(id, "CANCELLED")
		}, map[string]int{CheckCancelOnce: 1}},
		{"a request no answer claimed", func(w *cancelWorld) {
			id := w.order("CANCELLED", evCharge, evCancelReq, evCancelled)
			w.cancel200(id, false)
		}, map[string]int{CheckCancelOnce: 1}},
		{"a request no client sent", func(w *cancelWorld) {
			w.order("CANCELLED", evCharge, evCancelReq, evCancelled)
		}, map[string]int{CheckCancelOnce: 1}},

		// How the run closes.
		{"asked to cancel, it failed", func(w *cancelWorld) {
			id := w.order("FAILED", evCharge, evChargeDone, evCancelReq, evRefund, evFailed)
			w.cancel200(id, true)
		}, map[string]int{CheckCancelCloses: 1}},
		{"asked to cancel while waiting, it completed", func(w *cancelWorld) {
			id := w.order("COMPLETED", evCharge, evChargeDone, evCancelReq, evTimerFired, evCompleted)
			w.cancel200(id, true)
		}, map[string]int{CheckCancelCloses: 1}},
		{"charged, cancelled, not refunded", func(w *cancelWorld) {
			id := w.order("CANCELLED", evCharge, evChargeDone, evCancelReq, evCancelled)
			w.cancel200(id, true)
		}, map[string]int{CheckCancelCloses: 1}},
		{"charged after the request, not refunded", func(w *cancelWorld) {
			id := w.order("CANCELLED", evCharge, evCancelReq, evChargeDone, evCancelled)
			w.cancel200(id, true)
		}, map[string]int{CheckCancelCloses: 1}},
		{"refund scheduled, not completed", func(w *cancelWorld) {
			id := w.order("CANCELLED", evCharge, evChargeDone, evCancelReq, evRefund, evCancelled)
			w.cancel200(id, true)
		}, map[string]int{CheckCancelCloses: 1}},
		{"refunded twice", func(w *cancelWorld) {
			id := w.order("CANCELLED", evCharge, evChargeDone, evCancelReq, evRefund, evRefundDone, evRefund2, evCancelled)
			w.cancel200(id, true)
		}, map[string]int{CheckCancelCloses: 1}},
		{"refunded a charge that was not completed", func(w *cancelWorld) {
			id := w.order("CANCELLED", evCharge, evCancelReq, evRefund, evRefundDone, evCancelled)
			w.cancel200(id, true)
		}, map[string]int{CheckCancelCloses: 1}},

		// The completion and answer checks still see cancels.
		{"asked to cancel, still running", func(w *cancelWorld) {
			id := w.order("RUNNING", evCharge, evChargeDone, evCancelReq)
			w.cancel200(id, true)
		}, map[string]int{CheckCompleted: 1}},
		{"cancelled without a request", func(w *cancelWorld) {
			w.order("CANCELLED", evCharge, evCancelled)
		}, map[string]int{CheckCompleted: 1}},
		{"a cancel never answered", func(w *cancelWorld) {
			id := w.order("COMPLETED", evCharge, evChargeDone, evTimerFired, evCompleted)
			o := cancelOp(id)
			o.Err, o.Attempts = "node 2: context deadline exceeded", []Attempt{lostAttempt}
			w.add(o)
		}, map[string]int{CheckAnswered: 1}},
		{"a cancel answered for an execution no shard holds", func(w *cancelWorld) {
			w.cancel409(newExecID(0), "COMPLETED")
		}, map[string]int{CheckAckedExists: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			dsn, conn := plantDB(ctx, t)
			w := &cancelWorld{t: t, ctx: ctx, dsn: dsn, conn: conn}
			tt.build(w)

			st, err := ReadDB(ctx, map[uint16]string{0: dsn})
			require.NoError(t, err)
			got := map[string]int{}
			for _, v := range Check(w.ops, st) {
				t.Logf("violation [%s] %s", v.Check, v.Detail)
				got[v.Check]++
			}
			want := tt.want
			if want == nil {
				want = map[string]int{}
			}
			require.Equal(t, want, got)
		})
	}
}

// TestSummarizeCancel folds a history in event order: only a TimerFired
// before the first request counts, and activity names come from their
// ActivityScheduled.
func TestSummarizeCancel(t *testing.T) {
	t.Parallel()
	got := summarizeCancel([]cancelEvent{
		{id: 1, typ: "ActivityScheduled", activityID: "1", name: actCharge},
		{id: 2, typ: "ActivityCompleted", activityID: "1"},
		{id: 3, typ: "WorkflowCancelRequested"},
		{id: 4, typ: "TimerFired"},
		{id: 5, typ: "ActivityScheduled", activityID: "2", name: actRefund},
		{id: 6, typ: "ActivityCompleted", activityID: "2"},
		{id: 7, typ: "WorkflowCancelRequested"},
	})
	require.Equal(t, &cancelRow{requests: 2, firstReq: 3, chargeDone: 2, refundSched: 1, refundDone: 1}, got)
}

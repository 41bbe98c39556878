package e2e

import (
	"context"
	"fmt"
	"net/http"

	"github.com/jackc/pgx/v5"
)

// Activities of the demo order, as its history names them.
const (
	actCharge = "charge_card"
	actRefund = "refund_charge"
)

// terminalStates are the states of a closed run.
var terminalStates = map[string]bool{"COMPLETED": true, "FAILED": true, "CANCELLED": true, "TERMINATED": true, "TIMED_OUT": true}

// cancelRow is the part of a cancelled execution's history the cancel
// checks read. Event ids are -1 when the event is absent.
type cancelRow struct {
	requests    int64 // WorkflowCancelRequested events
	firstReq    int64 // event id of the first one
	chargeDone  int64 // event id of the charge's ActivityCompleted
	timerBefore bool  // a TimerFired precedes the first request
	refundSched int64 // refund_charge ActivityScheduled events
	refundDone  int64 // its ActivityCompleted events
}

// cancelEvent is one event of a cancelled execution, as readShard reads it.
type cancelEvent struct {
	id         int64
	typ        string
	activityID string
	name       string // ActivityScheduled: the activity's name
}

// summarizeCancel folds the events of one execution, in event id order,
// into its cancelRow.
func summarizeCancel(evs []cancelEvent) *cancelRow {
	r := &cancelRow{firstReq: -1, chargeDone: -1}
	names := map[string]string{} // activity id -> name
	for _, e := range evs {
		switch e.typ {
		case "WorkflowCancelRequested":
			if r.requests == 0 {
				r.firstReq = e.id
			}
			r.requests++
		case "TimerFired":
			r.timerBefore = r.timerBefore || r.requests == 0
		case "ActivityScheduled":
			names[e.activityID] = e.name
			if e.name == actRefund {
				r.refundSched++
			}
		case "ActivityCompleted":
			switch names[e.activityID] {
			case actCharge:
				if r.chargeDone < 0 {
					r.chargeDone = e.id
				}
			case actRefund:
				r.refundDone++
			}
		}
	}
	return r
}

// readCancels reads the histories of the shard's executions that have a
// cancel request into st.cancels.
func (st *DBState) readCancels(ctx context.Context, conn *pgx.Conn) error {
	rows, err := conn.Query(ctx, `
		SELECT execution_id::text, event_id, event_type, coalesce(data->>'activity_id', ''), coalesce(data->>'name', '')
		  FROM harvest_events
		 WHERE execution_id IN (SELECT execution_id FROM harvest_events WHERE event_type = 'WorkflowCancelRequested')
		   AND event_type IN ('WorkflowCancelRequested', 'TimerFired', 'ActivityScheduled', 'ActivityCompleted')
		 ORDER BY 1, 2`)
	if err != nil {
		return err
	}
	evs := map[string][]cancelEvent{}
	for rows.Next() {
		var id string
		var e cancelEvent
		if err := rows.Scan(&id, &e.id, &e.typ, &e.activityID, &e.name); err != nil {
			return err
		}
		evs[id] = append(evs[id], e)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for id, es := range evs {
		st.cancels[id] = summarizeCancel(es)
	}
	return nil
}

// ambiguous reports whether an attempt may have recorded its cancel
// without the client learning it: a transport failure, a 5xx (a forward
// that lost the owner's answer) or a 2xx whose body did not decode.
func (a Attempt) ambiguous() bool {
	return a.Status == 0 || a.Status >= 500 || a.Status/100 == 2 && a.Err != ""
}

// checkCancels runs the cancel checks over the cancel ops and the
// cancelled executions' histories.
//
//   - CheckCancelAnswer: a cancel is answered 200 {cancel_requested: true,
//     state: RUNNING, execution_id: its target, newly_cancelled set} or
//     409 execution_terminal with the run's final state; any other 4xx is
//     a violation (5xx and transport failures are retried by the client).
//   - CheckCancelOnce: at most one answer per execution says
//     newly_cancelled; its history has exactly one WorkflowCancelRequested
//     when an answer said cancel_requested, none when every attempt was
//     answered 409, and at most one otherwise (an attempt whose outcome
//     the client never learned may have recorded it before the run
//     closed). A request that no answer claimed as new needs such an
//     attempt, and a request no client sent is a violation.
//   - CheckCancelCloses: a closed run with a cancel request is CANCELLED,
//     or COMPLETED when a TimerFired precedes the request: the order's
//     last wait is its sleep after the approval, so the code had already
//     finished waiting and returns its result (a cancel is delivered in
//     history order). A CANCELLED run whose charge completed, before or
//     after the request (the order finishes its charge on a disconnected
//     context), has scheduled and completed its refund exactly once; a
//     run whose charge never completed has scheduled none. A run still
//     open is CheckCompleted's.
func checkCancels(ops []*Op, st *DBState, add func(check, format string, args ...any)) {
	type perExec struct {
		requested, ambiguous, sent bool
		newly                      int
	}
	byExec := map[string]*perExec{}
	for _, op := range sortedOps(ops) {
		if op.Kind != KindCancel {
			continue
		}
		pe := byExec[op.Target]
		if pe == nil {
			pe = &perExec{}
			byExec[op.Target] = pe
		}
		pe.sent = true
		for _, a := range op.Attempts {
			pe.ambiguous = pe.ambiguous || a.ambiguous()
		}
		x := st.execs[op.Target]
		switch {
		case op.OK:
			if op.ExecID != op.Target || op.CancelRequested == nil || !*op.CancelRequested || op.State != "RUNNING" || op.NewlyCancelled == nil {
				add(CheckCancelAnswer, "op %d cancel of %s answered %d for %s: cancel_requested %s, newly_cancelled %s, state %q",
					op.ID, op.Target, op.Status, op.ExecID, fmtBool(op.CancelRequested), fmtBool(op.NewlyCancelled), op.State)
			}
			if op.CancelRequested != nil && *op.CancelRequested {
				pe.requested = true
			}
			if op.NewlyCancelled != nil && *op.NewlyCancelled {
				pe.newly++
				if pe.newly == 2 {
					add(CheckCancelOnce, "cancel of %s was answered newly_cancelled more than once (op %d)", op.Target, op.ID)
				}
			}
		case op.Answered(): // 409 execution_terminal
			switch {
			case op.ExecID != op.Target || !terminalStates[op.State]:
				add(CheckCancelAnswer, "op %d cancel of %s answered 409 for %s in state %q", op.ID, op.Target, op.ExecID, op.State)
			case x != nil && x.state != op.State:
				add(CheckCancelAnswer, "op %d cancel of %s answered 409 %s; the run ended %s", op.ID, op.Target, op.State, x.state)
			}
		case op.Status/100 == 4 && op.Status != http.StatusTooManyRequests:
			add(CheckCancelAnswer, "op %d cancel of %s answered %d: %s", op.ID, op.Target, op.Status, op.Err)
		}
		if (op.OK || op.Answered()) && x == nil {
			add(CheckAckedExists, "op %d cancel answered %d for %s, which no shard holds", op.ID, op.Status, op.Target)
		}
	}

	for _, id := range sortedKeys(byExec) {
		pe := byExec[id]
		n := int64(0)
		if c := st.cancels[id]; c != nil {
			n = c.requests
		}
		switch {
		case pe.requested && n != 1:
			add(CheckCancelOnce, "execution %s: a cancel was answered cancel_requested, its history has %d WorkflowCancelRequested", id, n)
		case !pe.requested && !pe.ambiguous && n != 0:
			add(CheckCancelOnce, "execution %s: every cancel was answered 409, its history has %d WorkflowCancelRequested", id, n)
		case n > 1:
			add(CheckCancelOnce, "execution %s has %d WorkflowCancelRequested", id, n)
		case n == 1 && pe.newly == 0 && !pe.ambiguous:
			add(CheckCancelOnce, "execution %s has a WorkflowCancelRequested that no answer claimed and no attempt can have left", id)
		}
	}
	for _, id := range sortedKeys(st.cancels) {
		c := st.cancels[id]
		if byExec[id] == nil {
			add(CheckCancelOnce, "execution %s has %d WorkflowCancelRequested, and no client cancelled it", id, c.requests)
		}
		x := st.execs[id]
		if x == nil || x.state == "RUNNING" {
			continue // CheckCompleted reports it
		}
		charged := c.chargeDone >= 0
		switch {
		case x.state == "COMPLETED" && c.timerBefore:
			if c.refundSched != 0 {
				add(CheckCancelCloses, "execution %s completed (its sleep ended before the cancel) with %d refunds scheduled", id, c.refundSched)
			}
		case x.state != "CANCELLED":
			msg := ""
			if x.lastError != "" {
				msg = ": " + x.lastError
			}
			add(CheckCancelCloses, "execution %s was asked to cancel at event %d and ended %s%s", id, c.firstReq, x.state, msg)
		case charged && (c.refundSched != 1 || c.refundDone != 1):
			add(CheckCancelCloses, "execution %s: charged at event %d, cancelled at %d, %d refunds scheduled, %d completed",
				id, c.chargeDone, c.firstReq, c.refundSched, c.refundDone)
		case !charged && c.refundSched != 0:
			add(CheckCancelCloses, "execution %s: cancelled at event %d before its charge completed, %d refunds scheduled", id, c.firstReq, c.refundSched)
		}
	}
}

// CancelStats summarises the cancels of a run for the report: what the
// answers said and how the cancelled runs ended.
func CancelStats(ops []*Op, st *DBState) string {
	var newly, repeat, terminal, other int
	for _, op := range ops {
		switch {
		case op.Kind != KindCancel:
		case op.OK && op.NewlyCancelled != nil && *op.NewlyCancelled:
			newly++
		case op.OK:
			repeat++
		case op.Answered():
			terminal++
		default:
			other++
		}
	}
	var refunded, early, late, completed int
	for id, c := range st.cancels {
		x := st.execs[id]
		switch {
		case x == nil:
		case x.state == "COMPLETED":
			completed++
		case c.chargeDone >= 0 && c.chargeDone < c.firstReq:
			refunded++
		case c.chargeDone >= 0:
			late++ // charged during the request's delivery: refunded too
		default:
			early++
		}
	}
	return fmt.Sprintf("cancel answers: %d newly_cancelled, %d repeats, %d 409 execution_terminal, %d other; "+
		"runs with a cancel request: %d (refunded after the charge: %d, cancelled before the charge completed: %d, "+
		"charge completed after the request, then refunded: %d, completed before seeing it: %d)",
		newly, repeat, terminal, other, len(st.cancels), refunded, early, late, completed)
}

func fmtBool(b *bool) string {
	if b == nil {
		return "absent"
	}
	return fmt.Sprint(*b)
}

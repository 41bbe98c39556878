package e2e

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
)

// Updates (the workload's cart chains, any cart the databases hold).
//
// Per cart and update id:
//   - at most one acceptance (the SignalReceived keyed hv:upd:<id>) and at
//     most one UpdateCompleted, whatever was re-delivered or retried;
//   - the cart's output lists the update's sku at most once, and only if
//     its UpdateCompleted was recorded;
//   - an update answered "completed" was accepted and completed once, and
//     a completed cart lists its sku.

// CheckUpdateOnce is the check of the updates.
const CheckUpdateOnce = "update id -> accepted and applied once"

// updateKeyPrefix starts the signal key of an accepted update
// (harvest.UpdateKeyPrefix).
const updateKeyPrefix = "hv:upd:"

// uwsKeyPrefix starts the start key of an update-with-start
// (harvest.UpdateWithStartKeyPrefix): the start claim is the update id's.
const uwsKeyPrefix = "hv:uws:"

// isUpdateOp reports whether op is an update (with start or not).
func isUpdateOp(op *Op) bool { return op.Kind == KindUpdate || op.Kind == KindUWS }

// cartOutput is the part of the cart's output the checker reads.
type cartOutput struct {
	Items []struct {
		SKU string `json:"sku"`
	} `json:"items"`
}

// readUpdates counts the UpdateCompleted events per (execution, update id).
func (st *DBState) readUpdates(ctx context.Context, conn *pgx.Conn) error {
	rows, err := conn.Query(ctx, `
		SELECT execution_id::text, data->>'update_id', count(*)
		  FROM harvest_events WHERE event_type = 'UpdateCompleted'
		 GROUP BY 1, 2`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id, upd string
		var n int64
		if err := rows.Scan(&id, &upd, &n); err != nil {
			return err
		}
		st.updates[[2]string{id, upd}] += n
	}
	return rows.Err()
}

// checkCarts checks every update id and every cart's output.
func checkCarts(ops []*Op, st *DBState, add func(check, format string, args ...any)) {
	for _, k := range sortedKeys(st.updates) {
		if n := st.updates[k]; n > 1 {
			add(CheckUpdateOnce, "execution %s has %d UpdateCompleted events for update %q", k[0], n, k[1])
		}
	}
	for _, id := range sortedKeys(st.execs) {
		if x := st.execs[id]; x.name == wfCart && x.state == "COMPLETED" {
			checkCartOutput(st, x, add)
		}
	}
	for _, op := range ops {
		if isUpdateOp(op) && op.OK && op.Outcome == "completed" {
			checkAnsweredUpdate(st, op, add)
		}
	}
}

// checkCartOutput checks that a completed cart lists each sku once, each
// of an update recorded as completed.
func checkCartOutput(st *DBState, x *execRow, add func(check, format string, args ...any)) {
	var out cartOutput
	if err := json.Unmarshal([]byte(x.output), &out); err != nil {
		add(CheckUpdateOnce, "cart %s has an output that does not decode: %v", x.id, err)
		return
	}
	seen := map[string]bool{}
	for _, it := range out.Items {
		if seen[it.SKU] {
			add(CheckUpdateOnce, "cart %s lists item %q twice", x.id, it.SKU)
		}
		seen[it.SKU] = true
		if st.updates[[2]string{x.id, it.SKU}] != 1 {
			add(CheckUpdateOnce, "cart %s lists item %q, whose update has %d UpdateCompleted events", x.id, it.SKU,
				st.updates[[2]string{x.id, it.SKU}])
		}
	}
}

// checkAnsweredUpdate checks an update answered completed: accepted once,
// completed once, and listed by its cart once the cart completed.
func checkAnsweredUpdate(st *DBState, op *Op, add func(check, format string, args ...any)) {
	k := [2]string{op.ExecID, op.Key}
	if n := st.signals[[2]string{op.ExecID, updateKeyPrefix + op.Key}]; n != 1 {
		add(CheckUpdateOnce, "update %q answered completed by %s, which accepted it %d times", op.Key, op.ExecID, n)
	}
	if n := st.updates[k]; n != 1 {
		add(CheckUpdateOnce, "update %q answered completed by %s, which has %d UpdateCompleted events for it", op.Key, op.ExecID, n)
	}
	x := st.execs[op.ExecID]
	if x == nil || x.state != "COMPLETED" {
		return // CheckAckedExists and CheckCompleted report it
	}
	var out cartOutput
	_ = json.Unmarshal([]byte(x.output), &out) // checkCartOutput reports a bad one
	for _, it := range out.Items {
		if it.SKU == op.Key {
			return
		}
	}
	add(CheckUpdateOnce, "update %q answered completed by cart %s, whose output does not list it", op.Key, op.ExecID)
}

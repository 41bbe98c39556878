package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// cartWorld is a synthetic cart as a correct cluster leaves it: two
// updates accepted and completed once each (one answered twice: a
// re-delivery), listed by the cart's output, and the checkout.
type cartWorld struct {
	t    *testing.T
	ctx  context.Context
	conn *pgx.Conn
	dsns map[uint16]string
	cart string
	ops  []*Op
}

func newCartWorld(t *testing.T) *cartWorld {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	dsn, conn := plantDB(ctx, t)
	w := &cartWorld{t: t, ctx: ctx, conn: conn, dsns: map[uint16]string{0: dsn}, cart: newExecID(0)}
	require.NoError(t, plantExecution(ctx, conn, w.cart, wfCart, "wf-cart-1", "cart-1", "COMPLETED"))
	for _, sku := range []string{"cart-1-item-0", "cart-1-item-1"} {
		w.accept(sku)
		w.complete(sku)
	}
	w.output("cart-1-item-0", "cart-1-item-1")
	w.op(Op{Kind: KindStart, Workflow: wfCart, Key: "cart-1", ExecID: w.cart, Fresh: boolp(true)})
	w.update("cart-1-item-0")
	w.update("cart-1-item-0").Dup = true
	w.update("cart-1-item-1")
	return w
}

// startedByUpdate adds cart-2, started by its first update's
// update-with-start (answered twice: a re-delivery), and returns its id.
func (w *cartWorld) startedByUpdate() string {
	id := newExecID(0)
	require.NoError(w.t, plantExecution(w.ctx, w.conn, id, wfCart, "cart-2", uwsKeyPrefix+"cart-2-item-0", "COMPLETED"))
	require.NoError(w.t, plantOutput(w.ctx, w.conn, id, map[string]any{"items": []map[string]any{{"sku": "cart-2-item-0", "qty": 1}}, "count": 1}))
	require.NoError(w.t, plantEvent(w.ctx, w.conn, id, "SignalReceived",
		map[string]any{"signal_name": "hv:update", "idempotency_key": updateKeyPrefix + "cart-2-item-0"}))
	require.NoError(w.t, plantEvent(w.ctx, w.conn, id, "UpdateCompleted", map[string]any{"update_id": "cart-2-item-0", "name": updAddItem}))
	for _, dup := range []bool{false, true} {
		w.op(Op{Kind: KindUWS, Workflow: wfCart, Key: "cart-2-item-0", WorkflowID: "cart-2", ExecID: id, Outcome: "completed", Dup: dup})
	}
	return id
}

func (w *cartWorld) accept(id string) {
	require.NoError(w.t, plantEvent(w.ctx, w.conn, w.cart, "SignalReceived",
		map[string]any{"signal_name": "hv:update", "idempotency_key": updateKeyPrefix + id}))
}

func (w *cartWorld) complete(id string) {
	require.NoError(w.t, plantEvent(w.ctx, w.conn, w.cart, "UpdateCompleted", map[string]any{"update_id": id, "name": updAddItem}))
}

func (w *cartWorld) output(skus ...string) {
	var items []map[string]any
	for _, s := range skus {
		items = append(items, map[string]any{"sku": s, "qty": 1})
	}
	require.NoError(w.t, plantOutput(w.ctx, w.conn, w.cart, map[string]any{"items": items, "count": len(items)}))
}

func (w *cartWorld) op(o Op) *Op {
	o.ID, o.OK, o.Status = int64(len(w.ops)+1), true, 200
	w.ops = append(w.ops, &o)
	return &o
}

func (w *cartWorld) update(id string) *Op {
	return w.op(Op{Kind: KindUpdate, Workflow: wfCart, Key: id, Target: w.cart, ExecID: w.cart, Outcome: "completed"})
}

// TestCheckCarts runs the checker on a correct cart (no violation), then
// on copies with one planted violation each.
func TestCheckCarts(t *testing.T) {
	cases := []struct {
		name  string
		plant func(w *cartWorld)
		want  string
		says  string
	}{
		{"Clean", func(*cartWorld) {}, "", ""},
		{"AcceptedTwice", func(w *cartWorld) { w.accept("cart-1-item-0") }, CheckSignalOnce, "hv:upd:cart-1-item-0"},
		{"CompletedTwice", func(w *cartWorld) { w.complete("cart-1-item-1") }, CheckUpdateOnce, "2 UpdateCompleted"},
		{"ListedTwice", func(w *cartWorld) { w.output("cart-1-item-0", "cart-1-item-1", "cart-1-item-1") }, CheckUpdateOnce, "twice"},
		{"AnsweredButNotListed", func(w *cartWorld) { w.output("cart-1-item-0") }, CheckUpdateOnce, "does not list it"},
		{"ListedButNeverCompleted", func(w *cartWorld) { w.output("cart-1-item-0", "cart-1-item-1", "cart-1-item-9") }, CheckUpdateOnce, "0 UpdateCompleted"},
		{"AnsweredButNeverAccepted", func(w *cartWorld) {
			w.complete("cart-1-item-2")
			w.output("cart-1-item-0", "cart-1-item-1", "cart-1-item-2")
			w.update("cart-1-item-2")
		}, CheckUpdateOnce, "accepted it 0 times"},
		{"StartedByItsFirstUpdate", func(w *cartWorld) { w.startedByUpdate() }, "", ""},
		{"UpdateWithStartStartedTwice", func(w *cartWorld) {
			w.startedByUpdate()
			require.NoError(w.t, plantExecution(w.ctx, w.conn, newExecID(0), wfCart, "cart-2", uwsKeyPrefix+"cart-2-item-0", "COMPLETED"))
		}, CheckStartDedup, "2 executions"},
		{"UpdateWithStartAnsweredByAnotherRun", func(w *cartWorld) {
			w.startedByUpdate()
			w.op(Op{Kind: KindUWS, Workflow: wfCart, Key: "cart-1-item-0", WorkflowID: "cart-2", ExecID: w.cart, Outcome: "completed"})
		}, CheckAckedExists, "update-with-start"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newCartWorld(t)
			tc.plant(w)
			st, err := ReadDB(w.ctx, w.dsns)
			require.NoError(t, err)
			vs := Check(w.ops, st)
			for _, v := range vs {
				t.Logf("violation [%s] %s", v.Check, v.Detail)
			}
			if tc.want == "" {
				require.Empty(t, vs)
				return
			}
			require.True(t, reported(vs, tc.want, tc.says), "want a %q violation saying %q", tc.want, tc.says)
		})
	}
}

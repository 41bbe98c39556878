package e2e

import (
	"fmt"
	"math/rand/v2"
	"net/http"
)

// Cart chains: the updates part of the workload (issue 44).
//
// A cart chain starts the demo cart, sends it 2 to 4 keyed add_item
// updates, each with its key as its update id and as its item's sku
// (quantity 1), then its keyed checkout signal. Half the chains start
// their cart by its first update (update-with-start, workflow id
// cart-<n>), whose start key is the update id's (hv:uws:<id>). A deliberate re-delivery
// of an update repeats its id; a parked one is re-sent with it after the
// heal. The checker (checker_cart.go) proves each update id applied once:
// one acceptance signal, one UpdateCompleted, its sku once in the cart's
// output, and every update answered completed among them.

// The demo cart's names (demo/cart.go).
const (
	wfCart      = "cart"
	updAddItem  = "add_item"
	sigCheckout = "checkout"
)

// cartChain starts cart n, adds its items and checks it out.
func cartChain(n int64) chain {
	key := fmt.Sprintf("cart-%d", n)
	ops := []*Op{{Kind: KindStart, Workflow: wfCart, Key: key}}
	if rand.IntN(2) == 0 {
		ops = ops[:0]
	}
	for i := range 2 + rand.IntN(3) {
		ops = append(ops, &Op{Kind: KindUpdate, Workflow: wfCart, Key: fmt.Sprintf("%s-item-%d", key, i)})
	}
	if ops[0].Kind == KindUpdate {
		ops[0].Kind, ops[0].WorkflowID = KindUWS, key
	}
	return chain{ops: append(ops, &Op{Kind: KindSignal, Workflow: wfCart, Key: key + "-checkout"})}
}

// cartAddItem is the request of an add_item update: its key is its update
// id and its item's sku.
func cartAddItem(op *Op) request {
	return request{http.MethodPost, "/api/harvest/workflows/" + op.Target + "/update/" + updAddItem, op.Key,
		map[string]any{"args": map[string]any{"sku": op.Key, "qty": 1}}}
}

// cartUpdateWithStart is the request of an add_item update-with-start
// of cart op.WorkflowID: its key is its update id and its item's sku.
func cartUpdateWithStart(op *Op) request {
	return request{http.MethodPost, "/api/harvest/workflows/" + wfCart + "/update-with-start", op.Key,
		map[string]any{"workflow_id": op.WorkflowID, "update_name": updAddItem, "args": map[string]any{"sku": op.Key, "qty": 1}}}
}

// cartCheckout is the request of a cart's checkout.
func cartCheckout(op *Op) request {
	return request{http.MethodPost, "/api/harvest/workflows/" + op.Target + "/signal/" + sigCheckout, op.Key, "e2e"}
}

package demo_test

import (
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/demo"
)

// The cart's add_item update answers the cart after its reservation; a
// retried update id adds nothing; a bad item is refused and recorded
// nowhere.
func TestCart(t *testing.T) {
	t.Parallel()
	env, _ := setup(t)
	run := env.Start(demo.CartName, struct{}{})
	add := func(id string, it demo.CartItem) (demo.CartState, error) {
		res, err := env.Update(run.ExecutionID, demo.CartAddItemUpdate, id, it)
		if err != nil {
			return demo.CartState{}, err
		}
		require.True(t, res.Completed)
		var cart demo.CartState
		require.NoError(t, json.Unmarshal(res.Output, &cart))
		return cart, nil
	}
	cart, err := add("apples", demo.CartItem{SKU: "apple", Qty: 3})
	require.NoError(t, err)
	require.Equal(t, 3, cart.Count)
	again, err := add("apples", demo.CartItem{SKU: "apple", Qty: 50})
	require.NoError(t, err)
	require.Equal(t, cart, again, "a retried update id gets its first answer")
	_, err = add("none", demo.CartItem{SKU: "pear", Qty: 0})
	require.ErrorIs(t, err, harvest.ErrUpdateRejected)
	cart, err = add("pears", demo.CartItem{SKU: "pear", Qty: 2})
	require.NoError(t, err)
	require.Equal(t, 5, cart.Count)

	env.Signal(run.ExecutionID, demo.CartCheckoutSignal, "now")
	var out demo.CartState
	env.Output(run.ExecutionID, &out)
	require.Equal(t, []demo.CartItem{{SKU: "apple", Qty: 3}, {SKU: "pear", Qty: 2}}, out.Items)
	require.Equal(t, 5, out.Count)
}

// A cart started by its first item (update-with-start): the next item
// reaches the same cart, and a retry of the first finds it and its answer.
func TestCartStartedByItsFirstItem(t *testing.T) {
	t.Parallel()
	env, _ := setup(t)
	add := func(id string, it demo.CartItem) (uuid.UUID, demo.CartState) {
		res, err := env.UpdateWithStart(demo.CartName, "cart-7", struct{}{}, demo.CartAddItemUpdate, id, it)
		require.NoError(t, err)
		require.True(t, res.Update.Completed)
		var cart demo.CartState
		require.NoError(t, json.Unmarshal(res.Update.Output, &cart))
		return res.Start.ExecutionID, cart
	}
	first, cart := add("tea", demo.CartItem{SKU: "tea", Qty: 1})
	require.Equal(t, 1, cart.Count)
	next, cart := add("jam", demo.CartItem{SKU: "jam", Qty: 2})
	require.Equal(t, first, next, "the running cart is updated")
	require.Equal(t, 3, cart.Count)
	again, cart := add("tea", demo.CartItem{SKU: "tea", Qty: 9})
	require.Equal(t, first, again)
	require.Equal(t, 1, cart.Count, "a retried id gets its first answer")
}

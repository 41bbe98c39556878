package demo

import (
	"errors"

	"github.com/harvestd/harvest"
)

// The cart: a workflow that updates change and answer (issue 44).
//
// cart holds a shopping cart until its "checkout" signal. Its "add_item"
// update adds an item and answers the cart as it is then; its validator
// refuses an item without a sku or with a quantity outside 1…99 before
// anything is recorded, and its handler first reserves the item (the
// demo's noop_step activity, under the update's own activity key), so an
// update's answer waits for an effect. A retried update id gets its first
// answer and adds nothing.

// Names of the cart workflow, its update and its signal.
const (
	CartName           = "cart"
	CartAddItemUpdate  = "add_item"
	CartCheckoutSignal = "checkout"
	// CartMaxQty bounds an item's quantity.
	CartMaxQty = 99
)

// CartItem is the add_item update's argument.
type CartItem struct {
	SKU string `json:"sku"`
	Qty int    `json:"qty"`
}

// CartState is the cart: its items and their quantities' sum. The
// add_item update answers it, and the cart returns it at checkout.
type CartState struct {
	Items []CartItem `json:"items"`
	Count int        `json:"count"`
}

var (
	// AddItem is the typed add_item update.
	AddItem = harvest.NewUpdate[CartItem, CartState](CartAddItemUpdate)
	// Checkout ends the cart.
	Checkout = harvest.NewSignal[string](CartCheckoutSignal)
	// errBadItem is add_item's refusal.
	errBadItem = errors.New("an item needs a sku and a quantity of 1 to 99")
)

// cart is the cart workflow (see above).
func (d *Demo) cart(ctx harvest.Context, _ struct{}) (CartState, error) {
	cart := CartState{Items: []CartItem{}}
	AddItem.SetHandler(ctx, func(ctx harvest.Context, it CartItem) (CartState, error) {
		if _, err := d.NoopStep.Execute(ctx, it.Qty).Get(ctx); err != nil {
			return cart, err
		}
		cart.Items, cart.Count = append(cart.Items, it), cart.Count+it.Qty
		return cart, nil
	}, validItem)
	_, err := Checkout.Receive(ctx)
	return cart, err
}

// validItem is add_item's validator.
func validItem(it CartItem) error {
	if it.SKU == "" || it.Qty < 1 || it.Qty > CartMaxQty {
		return errBadItem
	}
	return nil
}

package main

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/demo"
)

// TestUpdateCommand updates the demo's cart: an update id is applied
// once, a refusal and a handler's failure exit 1, a bad --args-json is a
// usage error.
func TestUpdateCommand(t *testing.T) {
	b := setup(t)
	id := b.okJSON(t, "workflow", "start", demo.CartName)["execution_id"].(string)

	table := b.ok(t, "workflow", "update", id, demo.CartAddItemUpdate, "--args-json", `{"sku":"apple","qty":2}`, "--update-id", "apples")
	require.Equal(t, "completed", cell(t, table, "Outcome"))
	require.Contains(t, cell(t, table, "Result"), `"count":2`)
	again := b.okJSON(t, "workflow", "update", id, demo.CartAddItemUpdate, "--args-json", `{"sku":"apple","qty":9}`, "--update-id", "apples")
	require.Equal(t, map[string]any{"count": float64(2), "items": []any{map[string]any{"sku": "apple", "qty": float64(2)}}}, again["result"],
		"a repeated update id gets its first answer")

	fresh := b.ok(t, "workflow", "update", id, demo.CartAddItemUpdate, "--args-json", `{"sku":"pear","qty":1}`)
	require.NotEmpty(t, cell(t, fresh, "Update ID"), "an update without --update-id gets one, printed")

	r := b.ctl(t, "workflow", "update", id, demo.CartAddItemUpdate, "--args-json", `{"sku":"","qty":1}`)
	require.Equal(t, exitFailure, r.code)
	require.Contains(t, r.stderr, "update_rejected")
	r = b.ctl(t, "workflow", "update", id, "nope")
	require.Equal(t, exitFailure, r.code)
	require.Contains(t, r.stderr, "unknown_update")
	r = b.ctl(t, "workflow", "update", id, demo.CartAddItemUpdate, "--args-json", `{"sku":`)
	require.Equal(t, exitUsage, r.code)
}

// TestUpdateWithStartCommand starts a cart by its first update and
// updates it by the next; a repeated id gets the same run and answer.
func TestUpdateWithStartCommand(t *testing.T) {
	b := setup(t)
	uws := func(id, sku string) []string {
		return []string{"workflow", "update-with-start", demo.CartName, demo.CartAddItemUpdate, "--workflow-id", "cart-ctl",
			"--update-id", id, "--args-json", `{"sku":"` + sku + `","qty":1}`}
	}
	table := b.ok(t, uws("first", "apple")...)
	require.Equal(t, "completed", cell(t, table, "Outcome"))
	require.Equal(t, "true", cell(t, table, "Started fresh"))
	first := b.okJSON(t, uws("first", "plum")...)
	require.Equal(t, false, first["started_fresh"], "a repeated id finds the run it started")
	require.Contains(t, fmt.Sprint(first["result"]), "apple")
	next := b.okJSON(t, uws("second", "pear")...)
	require.Equal(t, first["execution_id"], next["execution_id"])
	require.EqualValues(t, 2, next["result"].(map[string]any)["count"])
	r := b.ctl(t, "workflow", "update-with-start", demo.CartName, demo.CartAddItemUpdate)
	require.Equal(t, exitUsage, r.code, "--workflow-id is required")
}

package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// harvestctl follows a continue-as-new chain: describe --follow shows the
// current run, result of the first run's id waits for the chain's end,
// and a keyed start's replay names the latest run.
func TestContinueAsNewChain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first := b.okJSON(t, "workflow", "start", "counter", "--idempotency-key", "c-1", "--input-json", `{"every":1,"until":2}`)
	id := first["execution_id"].(string)
	b.ok(t, "workflow", "signal", id, "add", "--payload-json", `{"id":"a","n":1}`, "--idempotency-key", "a")
	var next string
	require.Eventually(t, func() bool {
		d := b.okJSON(t, "workflow", "describe", id)
		next, _ = d["execution"].(map[string]any)["continued_to"].(string)
		return next != ""
	}, 20*time.Second, 20*time.Millisecond)

	t.Run("DescribeFollowsTheChain", func(t *testing.T) {
		table := b.ok(t, "workflow", "describe", "--follow", id)
		require.Equal(t, next, cell(t, table, "Execution ID"))
		require.Equal(t, id, cell(t, table, "Continued from"))
		require.Equal(t, id, cell(t, table, "Chain"))
		table = b.ok(t, "workflow", "describe", id)
		require.Equal(t, next, cell(t, table, "Continued to"))
	})

	t.Run("SignalsToTheOldIdNameTheCurrentRun", func(t *testing.T) {
		table := b.ok(t, "workflow", "signal", id, "add", "--payload-json", `{"id":"a","n":1}`, "--idempotency-key", "a")
		require.Contains(t, cell(t, table, "Signal delivered"), "false", "a retry: the chain has the key")
	})

	t.Run("ReplayNamesTheLatestRun", func(t *testing.T) {
		table := b.ok(t, "workflow", "start", "counter", "--idempotency-key", "c-1", "--input-json", `{"until":2}`)
		require.Equal(t, id, cell(t, table, "Execution ID"))
		require.Equal(t, next, cell(t, table, "Latest execution ID"))
	})

	t.Run("ResultWaitsForTheChainsEnd", func(t *testing.T) {
		table := b.ok(t, "workflow", "signal", id, "add", "--payload-json", `{"id":"b","n":1}`, "--idempotency-key", "b")
		require.Equal(t, next, cell(t, table, "Current execution ID"))
		r := b.okJSON(t, "workflow", "result", id, "--wait", "20s")
		require.Equal(t, "COMPLETED", r["state"])
		require.NotEqual(t, id, r["execution_id"], "the chain's last run")
	})
}

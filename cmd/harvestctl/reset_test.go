package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/demo"
)

// TestResetCommand resets a running cart to its first task; a repeated
// key answers the same run, and a point is required, once.
func TestResetCommand(t *testing.T) {
	b := setup(t)
	id := b.okJSON(t, "workflow", "start", demo.CartName)["execution_id"].(string)
	table := b.ok(t, "workflow", "reset", id, "--point", "first", "--reason", "new code", "--idempotency-key", "r1")
	require.Equal(t, "true", cell(t, table, "Newly reset"))
	require.Equal(t, "true", cell(t, table, "Terminated"))
	require.Equal(t, id, cell(t, table, "Replaced"))
	again := b.okJSON(t, "workflow", "reset", id, "--event-id", "0", "--idempotency-key", "r1")
	require.Equal(t, cell(t, table, "Execution ID"), again["execution_id"])
	require.Equal(t, false, again["newly_reset"])
	require.Equal(t, exitUsage, b.ctl(t, "workflow", "reset", id).code, "a point is required")
	require.Equal(t, exitUsage, b.ctl(t, "workflow", "reset", id, "--point", "first", "--event-id", "0").code, "one point")
	r := b.ctl(t, "workflow", "reset", id, "--event-id", "99")
	require.Equal(t, exitFailure, r.code)
	require.Contains(t, r.stderr, "invalid_argument")
}

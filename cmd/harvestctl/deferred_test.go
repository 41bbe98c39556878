package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDeferred starts a debounced start, lists it pending and reads it
// once started, through the CLI.
func TestDeferred(t *testing.T) {
	b := setup(t)
	d := b.okJSON(t, "deferred", "start", "noop_chain", "--input-json", `{"activities":1}`, "--debounce-key", "k", "--window", "300ms")
	require.Equal(t, "pending", d["state"])
	id := d["deferred_id"].(string)
	require.Contains(t, b.ok(t, "deferred", "list"), id)
	require.Eventually(t, func() bool {
		return cell(t, b.ok(t, "deferred", "get", id), "State") == "started"
	}, 20*time.Second, 20*time.Millisecond)
	table := b.ok(t, "deferred", "get", id)
	require.NotEmpty(t, cell(t, table, "Execution ID"))
	require.Equal(t, "debounce k", cell(t, table, "Policy"))

	r := b.ctl(t, "deferred", "start", "noop_chain", "--batch-key", "a", "--debounce-key", "b", "--window", "1s")
	require.Equal(t, exitUsage, r.code, r.stderr)
	require.True(t, strings.Contains(r.stderr, "exactly one"), r.stderr)
}

package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/demo"
)

// TestBatchCommand terminates three carts with a followed batch job, then
// reads it again; missing flags are usage errors.
func TestBatchCommand(t *testing.T) {
	b := setup(t)
	for range 3 {
		b.okJSON(t, "workflow", "start", demo.CartName)
	}
	r := b.ctl(t, "batch", "start", "--operation", "terminate", "--workflow-name", demo.CartName, "--state", "RUNNING",
		"--rate", "100", "--idempotency-key", "carts", "--follow")
	require.Equal(t, 0, r.code, "%s", r.stderr)
	require.Contains(t, r.stderr, "matched 3: done 3, skipped 0, failed 0", "the progress line")
	require.Equal(t, "completed", cell(t, r.stdout, "State"))
	require.Equal(t, "3", cell(t, r.stdout, "Done"))

	again := b.okJSON(t, "batch", "start", "--operation", "terminate", "--workflow-name", demo.CartName, "--idempotency-key", "carts")
	require.Equal(t, false, again["created"], "the key finds the job")
	job := b.okJSON(t, "batch", "describe", again["batch_id"].(string))
	require.EqualValues(t, 3, job["progress"].(map[string]any)["matched"])
	require.Equal(t, exitUsage, b.ctl(t, "batch", "start", "--operation", "terminate").code, "--workflow-name is required")
	r = b.ctl(t, "batch", "start", "--operation", "explode", "--workflow-name", demo.CartName)
	require.Equal(t, exitFailure, r.code)
	require.Contains(t, r.stderr, "invalid_argument")
	r = b.ctl(t, "batch", "start", "--operation", "reset", "--workflow-name", demo.CartName)
	require.Equal(t, exitFailure, r.code, "a reset job needs --reset-point")
	require.Contains(t, r.stderr, "reset_point")
}

// TestBatchResetCommand resets two running carts to their first task.
func TestBatchResetCommand(t *testing.T) {
	b := setup(t)
	for range 2 {
		b.okJSON(t, "workflow", "start", demo.CartName)
	}
	r := b.ctl(t, "batch", "start", "--operation", "reset", "--reset-point", "first", "--workflow-name", demo.CartName,
		"--state", "RUNNING", "--follow")
	require.Equal(t, 0, r.code, "%s", r.stderr)
	require.Equal(t, "2", cell(t, r.stdout, "Done"))
	list := b.okJSON(t, "workflow", "list", "--workflow-name", demo.CartName, "--state", "RUNNING")
	require.Len(t, list["workflows"], 2, "the two new runs")
}

package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLimitCommands drives limit set, list and delete against a real node
// keeping its limits in its shard database: a limit set here holds the
// demo's counter to one run. Subtests run in order.
func TestLimitCommands(t *testing.T) {
	b := setupAuthNode(t)
	startCounter := func(t *testing.T) string {
		t.Helper()
		table := b.ok(t, b.as(b.admin, "workflow", "start", "counter", "--input-json", `{"until":3}`)...)
		return cell(t, table, "State")
	}

	t.Run("SetWorkflow", func(t *testing.T) {
		table := b.ok(t, b.as(b.admin, "limit", "set", "workflow", "counter", "--max-running", "1")...)
		require.Equal(t, "workflow", cell(t, table, "Kind"))
		require.Equal(t, "counter", cell(t, table, "Name"))
		require.Equal(t, "1", cell(t, table, "Max running"))
		require.Equal(t, "-", cell(t, table, "Key pointer"))
		require.Equal(t, "shard", cell(t, table, "Scope"))
		require.NotContains(t, table, "Per second", "a workflow has no rate")
		m := b.okJSON(t, b.as(b.admin, "limit", "set", "workflow", "counter", "--max-running", "1")...)
		require.Equal(t, float64(1), m["max_running"], "the same limit again")
		cluster := b.ok(t, b.as(b.admin, "limit", "set", "workflow", "export", "--max-running", "3", "--scope", "cluster")...)
		require.Equal(t, "cluster", cell(t, cluster, "Scope"))
		b.ok(t, b.as(b.admin, "limit", "delete", "workflow", "export")...)
	})
	t.Run("TheLimitHolds", func(t *testing.T) {
		require.Equal(t, "RUNNING", startCounter(t))
		require.Equal(t, "QUEUED", startCounter(t))
	})
	t.Run("SetActivity", func(t *testing.T) {
		table := b.ok(t, b.as(b.admin, "limit", "set", "activity", "noop_step", "--per-second", "2.5", "--burst", "3",
			"--rate-key-pointer", "/tenant")...)
		require.Equal(t, "-", cell(t, table, "Max running"), "the declared concurrency limit lifted, if any")
		require.Equal(t, "2.5", cell(t, table, "Per second"))
		require.Equal(t, "3", cell(t, table, "Burst"))
		require.Equal(t, "/tenant", cell(t, table, "Rate key pointer"))
	})
	t.Run("SetRefusals", func(t *testing.T) {
		for _, args := range [][]string{
			{"limit", "set", "workflow", "counter"},
			{"limit", "set", "workflow", "counter", "--max-running", "1", "--per-second", "1"},
			{"limit", "set", "activity", "noop_step"},
			{"limit", "set", "shard", "counter", "--max-running", "1"},
			{"limit", "set", "workflow", "--max-running", "1"},
			{"limit", "set", "workflow", "counter", "--max-running", "many"},
		} {
			r := b.ctl(t, b.as(b.admin, args...)...)
			require.Equal(t, exitUsage, r.code, "%v: stderr: %s", args, r.stderr)
		}
		for _, args := range [][]string{
			{"limit", "set", "workflow", "counter", "--max-running", "-1"},
			{"limit", "set", "workflow", "counter", "--max-running", "1", "--key-pointer", "customer"},
			{"limit", "set", "activity", "noop_step", "--per-second", "1e9"},
			{"limit", "set", "workflow", "counter", "--max-running", "1", "--scope", "planet"},
			{"limit", "set", "activity", "noop_step", "--max-running", "1", "--scope", "cluster"},
		} {
			r := b.ctl(t, b.as(b.admin, args...)...)
			require.Equal(t, exitFailure, r.code, "%v: stderr: %s", args, r.stderr)
			require.Contains(t, r.stderr, "invalid_argument, HTTP 400", args)
		}
	})
	t.Run("List", func(t *testing.T) {
		table := b.ok(t, b.as(b.admin, "limit", "list")...)
		wf := rows(table, "workflow")
		require.Len(t, wf, 1, table)
		require.Equal(t, []string{"workflow", "counter", "1", "-", "shard", "-", "-", "-"}, wf[0][:8], "nothing refused was stored")
		act := rows(table, "activity")
		require.Len(t, act, 1, table)
		require.Equal(t, []string{"activity", "noop_step", "-", "-", "-", "2.5", "3", "/tenant"}, act[0][:8])
		m := b.okJSON(t, b.as(b.admin, "limit", "list")...)
		require.Len(t, m["limits"], 2)
	})
	t.Run("NeedsAdmin", func(t *testing.T) {
		m := b.okJSON(t, b.as(b.admin, "token", "create", "--scope", "write")...)
		refused(t, b.ctl(t, b.as(m["token"].(string), "limit", "list")...),
			"forbidden, HTTP 403", "the token's scope is too low for this: set --token or HARVEST_TOKEN to a token of scope admin")
	})
	t.Run("Delete", func(t *testing.T) {
		table := b.ok(t, b.as(b.admin, "limit", "delete", "workflow", "counter")...)
		require.Equal(t, "workflow counter", cell(t, table, "Deleted"))
		r := b.ctl(t, b.as(b.admin, "limit", "delete", "workflow", "counter")...)
		require.Equal(t, exitFailure, r.code)
		require.Equal(t, "error: workflow limit counter: unknown limit (not_found, HTTP 404)\n", r.stderr)
		r = b.ctl(t, b.as(b.admin, "limit", "delete", "shard", "counter")...)
		require.Equal(t, exitUsage, r.code, "stderr: %s", r.stderr)
		require.Equal(t, "RUNNING", startCounter(t), "the limit gone, a start runs at once")
	})
}

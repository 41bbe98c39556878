package main

import (
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/api"
	"github.com/harvestd/harvest/engine"
)

// TestGates closes, lists and opens gates through the CLI. Subtests run in
// order and share the node.
func TestGates(t *testing.T) {
	b := setupEngine(t, func(e *engine.Engine, pool *pgxpool.Pool) api.Config {
		return api.Config{Gates: e}
	})

	t.Run("Close", func(t *testing.T) {
		before := time.Now()
		table := b.ok(t, "gate", "close", "--scope", "workflow_name", "--value", "order", "--reason", "incident 42",
			"--expires-in", "1h", "--id", "freeze-orders")
		require.Equal(t, "freeze-orders", cell(t, table, "Gate ID"))
		require.Equal(t, "workflow_name=order", cell(t, table, "Scope"))
		require.Equal(t, "incident 42", cell(t, table, "Reason"))
		expires, err := time.Parse(time.RFC3339, cell(t, table, "Expires"))
		require.NoError(t, err)
		require.WithinDuration(t, before.Add(time.Hour), expires, time.Minute)

		g := b.okJSON(t, "gate", "close", "--scope", "cluster", "--reason", "maintenance")
		require.True(t, strings.HasPrefix(g["gate_id"].(string), "gate_"), "minted id: %v", g)
		require.Equal(t, "cluster", g["scope_kind"])
		require.NotContains(t, g, "expires_at")
	})

	t.Run("List", func(t *testing.T) {
		table := b.ok(t, "gate", "list")
		require.Len(t, rows(table, "ID"), 1, table)
		freeze := rows(table, "freeze-orders")
		require.Len(t, freeze, 1, table)
		require.Equal(t, []string{"freeze-orders", "workflow_name=order", "incident 42"}, freeze[0][:3])
		require.Contains(t, table, "never (until opened)")

		list := b.okJSON(t, "gate", "list")["gates"].([]any)
		require.Len(t, list, 2)
		require.Equal(t, "freeze-orders", list[0].(map[string]any)["gate_id"], "oldest first")
	})

	t.Run("GatedStartFails", func(t *testing.T) {
		r := b.ctl(t, "workflow", "start", "order", "--input-json", orderInput)
		require.Equal(t, exitFailure, r.code, "stdout: %s", r.stdout)
		require.Equal(t, "error: admission blocked (admission_blocked, HTTP 503)\n", r.stderr)
	})

	t.Run("Open", func(t *testing.T) {
		table := b.ok(t, "gate", "open", "freeze-orders")
		require.Equal(t, "freeze-orders", cell(t, table, "Lifted gate"))
		r := b.ctl(t, "gate", "open", "freeze-orders")
		require.Equal(t, exitFailure, r.code)
		require.Contains(t, r.stderr, "not_found, HTTP 404")

		cluster := b.okJSON(t, "gate", "list")["gates"].([]any)
		require.Len(t, cluster, 1)
		id := cluster[0].(map[string]any)["gate_id"].(string)
		require.Equal(t, map[string]any{"lifted": true, "gate_id": id}, b.okJSON(t, "gate", "open", id))
		require.Len(t, rows(b.ok(t, "gate", "list"), "ID"), 1)
		b.ok(t, "workflow", "start", "order", "--input-json", orderInput)
	})

	t.Run("UsageErrors", func(t *testing.T) {
		for _, args := range [][]string{
			{"gate", "close", "--scope", "cluster"},                                         // no reason
			{"gate", "close", "--reason", "r"},                                              // no scope
			{"gate", "close", "--scope", "planet", "--reason", "r"},                         // unknown scope
			{"gate", "close", "--scope", "cluster", "--value", "x", "--reason", "r"},        // value on cluster
			{"gate", "close", "--scope", "shard", "--reason", "r"},                          // no value
			{"gate", "close", "--scope", "cluster", "--reason", "r", "--expires-in", "-1m"}, // past
			{"gate", "open"},
		} {
			r := b.ctl(t, args...)
			require.Equal(t, exitUsage, r.code, "%v: stderr %s", args, r.stderr)
			require.Empty(t, r.stdout)
		}
	})

	t.Run("NodeWithoutGates", func(t *testing.T) {
		r := setup(t).ctl(t, "gate", "list")
		require.Equal(t, exitFailure, r.code)
		require.Contains(t, r.stderr, "no admission gates")
	})
}

func TestStartDeferredAndCallbacks(t *testing.T) {
	b := setup(t)
	const onboarding = `{"user_id":7}`

	deferred := b.okJSON(t, "workflow", "start", "onboarding", "--input-json", onboarding, "--delay", "1h")
	r := b.ctl(t, "workflow", "result", deferred["execution_id"].(string), "--wait", "300ms")
	require.Equal(t, exitStillRunning, r.code, "a run deferred an hour has not run: %s", r.stderr)

	at := b.okJSON(t, "workflow", "start", "onboarding", "--input-json", onboarding, "--start-at", time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	r = b.ctl(t, "workflow", "result", at["execution_id"].(string), "--wait", "300ms")
	require.Equal(t, exitStillRunning, r.code, r.stderr)

	now := b.okJSON(t, "workflow", "start", "onboarding", "--input-json", onboarding)
	require.Equal(t, "COMPLETED", b.okJSON(t, "workflow", "result", now["execution_id"].(string), "--wait", "20s")["state"],
		"the same start without a delay completes")

	r = b.ctl(t, "workflow", "start", "onboarding", "--delay", "1m", "--start-at", time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	require.Equal(t, exitFailure, r.code)
	require.Contains(t, r.stderr, "invalid_argument", "both reached the server")

	r = b.ctl(t, "workflow", "start", "onboarding", "--start-at", "tomorrow")
	require.Equal(t, exitUsage, r.code)
	require.Contains(t, r.stderr, "--start-at")

	r = b.ctl(t, "workflow", "start", "onboarding", "--input-json", onboarding, "--callback-url", "https://93.184.216.34/done",
		"--callback-url", "http://127.0.0.1:1/done")
	require.Equal(t, exitFailure, r.code)
	require.Contains(t, r.stderr, "callback_refused, HTTP 422", "the second callback reached the server's SSRF check")
	require.Contains(t, r.stderr, "127.0.0.1")
}

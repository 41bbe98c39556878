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

// TestSchedule drives a schedule through the CLI. Subtests run in order
// and share the node.
func TestSchedule(t *testing.T) {
	b := setupEngine(t, func(*engine.Engine, *pgxpool.Pool) api.Config { return api.Config{} })

	t.Run("Create", func(t *testing.T) {
		table := b.ok(t, "schedule", "create", "nightly", "--workflow", "noop_chain", "--input-json", `{"activities":1}`,
			"--cron", "30 2 * * *", "--time-zone", "America/New_York", "--overlap", "allow_all")
		require.Equal(t, "nightly", cell(t, table, "Schedule ID"))
		require.Equal(t, "cron 30 2 * * * (America/New_York)", cell(t, table, "When"))
		next := strings.Split(cell(t, table, "Next fires"), ", ")
		require.Len(t, next, 5)
		ny, err := time.LoadLocation("America/New_York")
		require.NoError(t, err)
		for _, s := range next {
			at, err := time.Parse(time.RFC3339, s)
			require.NoError(t, err)
			require.Equal(t, "02:30", at.In(ny).Format("15:04"), "the next fires are at 02:30 New York time")
		}
	})
	t.Run("CreateRefusesBadInput", func(t *testing.T) {
		r := b.ctl(t, "schedule", "create", "x", "--workflow", "noop_chain")
		require.Equal(t, exitUsage, r.code, r.stderr)
		require.Contains(t, r.stderr, "one of --cron and --interval")
		r = b.ctl(t, "schedule", "create", "x", "--workflow", "noop_chain", "--cron", "* * * * *", "--time-zone", "Mars/Base")
		require.Equal(t, exitFailure, r.code, r.stderr)
		require.Contains(t, r.stderr, "invalid_argument, HTTP 400")
	})
	t.Run("List", func(t *testing.T) {
		table := b.ok(t, "schedule", "list")
		got := rows(table, "nightly")
		require.Len(t, got, 1, table)
		require.Equal(t, []string{"nightly", "noop_chain", "cron 30 2 * * * (America/New_York)", "allow_all", "no"}, got[0][:5])
		require.Len(t, b.okJSON(t, "schedule", "list")["schedules"], 1)
	})
	t.Run("TriggerAndDescribe", func(t *testing.T) {
		fire := b.okJSON(t, "schedule", "trigger", "nightly")["fire"].(map[string]any)
		require.True(t, strings.HasPrefix(fire["key"].(string), "hv:sched:nightly:1:"), fire)
		require.Eventually(t, func() bool {
			return strings.Contains(b.ok(t, "schedule", "describe", "nightly"), "started (triggered)")
		}, 20*time.Second, 20*time.Millisecond)
	})
	t.Run("TriggerWithAKeyTwice", func(t *testing.T) {
		first := b.okJSON(t, "schedule", "trigger", "--idempotency-key", "ops-1", "nightly")
		require.Equal(t, "hv:sched:nightly:1:trigger:ops-1", first["fire"].(map[string]any)["key"])
		require.Equal(t, false, first["deduplicated"])
		require.Equal(t, "yes: the first trigger with this key", cell(t, b.ok(t, "schedule", "trigger", "--idempotency-key", "ops-1", "nightly"), "Deduplicated"))
	})
	t.Run("PauseResumeDelete", func(t *testing.T) {
		require.Equal(t, "yes", cell(t, b.ok(t, "schedule", "pause", "nightly"), "Paused"))
		require.Equal(t, "no", cell(t, b.ok(t, "schedule", "resume", "nightly"), "Paused"))
		require.Equal(t, "nightly", cell(t, b.ok(t, "schedule", "delete", "nightly"), "Deleted schedule"))
		r := b.ctl(t, "schedule", "describe", "nightly")
		require.Equal(t, exitFailure, r.code)
		require.Contains(t, r.stderr, "not_found")
	})
}

package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestActivityCommands drives activity register, list and delete against
// a real node keeping its HTTP activities in its shard database.
// Subtests run in order.
func TestActivityCommands(t *testing.T) {
	b := setupAuthNode(t)
	const secret = "Bearer sk_ctl_activity_secret"
	headers := filepath.Join(t.TempDir(), "headers")
	require.NoError(t, os.WriteFile(headers, []byte("# the downstream's key\nAuthorization: "+secret+"\n"), 0o600))
	register := []string{"activity", "register", "charge", "--url", "https://93.184.215.14/charge", "--header-file", headers,
		"--header", "X-Team: payments", "--timeout", "30s", "--max-attempts", "5"}

	t.Run("Register", func(t *testing.T) {
		table := b.ok(t, b.as(b.admin, register...)...)
		require.Equal(t, "https://93.184.215.14/charge", cell(t, table, "URL"))
		require.Equal(t, "Authorization,X-Team", cell(t, table, "Headers"))
		require.Equal(t, "30s", cell(t, table, "Timeout"))
		require.NotContains(t, table, secret)
		m := b.okJSON(t, b.as(b.admin, register...)...)
		require.Equal(t, map[string]any{"Authorization": "[redacted]", "X-Team": "[redacted]"}, m["headers"], "the same activity again")
		require.Equal(t, map[string]any{"max_attempts": float64(5)}, m["retry"])
	})
	t.Run("RegisterRefusals", func(t *testing.T) {
		r := b.ctl(t, b.as(b.admin, "activity", "register", "x")...)
		require.Equal(t, exitUsage, r.code, "stderr: %s", r.stderr)
		r = b.ctl(t, b.as(b.admin, "activity", "register", "x", "--url", "https://93.184.215.14/", "--header", "no colon")...)
		require.Equal(t, exitUsage, r.code, "stderr: %s", r.stderr)
		r = b.ctl(t, b.as(b.admin, "activity", "register", "x", "--url", "http://127.0.0.1:9/")...)
		require.Equal(t, exitFailure, r.code)
		require.Contains(t, r.stderr, "url_refused, HTTP 422")
		r = b.ctl(t, b.as(b.admin, "activity", "register", "charge_card", "--url", "https://93.184.215.14/")...)
		require.Equal(t, exitFailure, r.code)
		require.Contains(t, r.stderr, "registered in Go", "a Go activity's name")
	})
	t.Run("ListRedacts", func(t *testing.T) {
		table := b.ok(t, b.as(b.admin, "activity", "list")...)
		require.Len(t, rows(table, "charge"), 1, table)
		require.NotContains(t, table, secret)
		m := b.okJSON(t, b.as(b.admin, "activity", "list")...)
		acts := m["activities"].([]any)
		require.Len(t, acts, 1)
		require.Equal(t, "[redacted]", acts[0].(map[string]any)["headers"].(map[string]any)["Authorization"])
	})
	t.Run("Delete", func(t *testing.T) {
		table := b.ok(t, b.as(b.admin, "activity", "delete", "charge")...)
		require.Equal(t, "charge", cell(t, table, "Deleted"))
		r := b.ctl(t, b.as(b.admin, "activity", "delete", "charge")...)
		require.Equal(t, exitFailure, r.code)
		require.Equal(t, "error: http activity charge: unknown http activity (not_found, HTTP 404)\n", r.stderr)
	})
}

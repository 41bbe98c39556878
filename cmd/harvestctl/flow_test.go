package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/demo"
)

// TestFlow starts the demo's limited report past its limit with the
// flow flags and reads the flow through the CLI.
func TestFlow(t *testing.T) {
	b := setup(t)
	for i := range demo.ReportMaxRunning + 1 {
		r := b.okJSON(t, "workflow", "start", demo.ReportName, "--input-json", `{"customer":"acme","sleep_ms":3600000}`,
			"--priority", "2", "--fairness-key", "tenant-a", "--fairness-weight", "2")
		require.Equal(t, map[bool]string{true: "RUNNING", false: "QUEUED"}[i < demo.ReportMaxRunning], r["state"],
			"free slots first, then the queue")
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		table := b.ok(t, "flow")
		require.Equal(t, [][]string{{demo.ReportName, "2", "/customer", "shard"}}, rows(table, demo.ReportName), table)
		require.Equal(t, [][]string{{demo.ExportName, "2", "/tenant", "cluster"}}, rows(table, demo.ExportName), table)
		require.Equal(t, [][]string{{demo.RenderReportName, "1", "/customer", "-", "-"}}, rows(table, demo.RenderReportName), table)
		keys := rows(table, "0") // the test node's one shard: its workflow keys (no report renders yet)
		if len(keys) == 1 && keys[0][3] == "2" {
			require.Equal(t, []string{"0", demo.ReportName, `"acme"`, "2", "1"}, keys[0], table)
			break
		}
		require.True(t, time.Now().Before(deadline), "never two running: %s", table)
		time.Sleep(20 * time.Millisecond)
	}
	r := b.ctl(t, "workflow", "start", demo.ReportName, "--input-json", `{"customer":"acme"}`, "--priority", "7")
	require.Equal(t, exitFailure, r.code, "stdout: %s", r.stdout)
	require.Contains(t, r.stderr, "priority 7 is out of range")
}

package payout_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine"
	"github.com/harvestd/harvest/examples/payments/payout"
)

// update rewrites the recorded history from a run of the current code.
var update = flag.Bool("update", false, "record testdata/payout_history.json again")

// historyFile is a paid payout's history, as
// `harvestctl -o json workflow history --all ID` prints it.
var historyFile = filepath.Join("testdata", "payout_history.json")

// TestReplayRecordedHistory is the pre-deploy check: the code must still
// replay a history recorded by the code that is deployed.
func TestReplayRecordedHistory(t *testing.T) {
	if *update {
		recordHistory(t)
	}
	reg, err := payout.New(payout.NewBank()).Registry()
	require.NoError(t, err)
	require.NoError(t, harvest.ReplayHistoryFile(reg, historyFile))
}

// recordHistory runs an approved payout to its end and writes its history.
func recordHistory(t *testing.T) {
	env, _ := setup(t)
	run := env.Start(payout.WorkflowName, input)
	env.WaitFor(run.ExecutionID, "the approval wait", func(d engine.Description) bool { return len(d.PendingTimers) == 1 })
	env.Signal(run.ExecutionID, payout.ApprovedName, payout.Approval{By: "ann"})
	env.WaitFor(run.ExecutionID, "the cooling-off timer", func(d engine.Description) bool {
		for _, tm := range d.PendingTimers {
			if tm.FireAt.Sub(env.Now()) > 23*time.Hour {
				return true
			}
		}
		return false
	})
	env.Advance(24*time.Hour + time.Minute)
	var out payout.Result
	env.Output(run.ExecutionID, &out)
	require.Equal(t, "paid", out.Status)
	events := env.History(run.ExecutionID)
	raw, err := json.MarshalIndent(map[string]any{"events": events, "next_cursor": nil,
		"total_events": len(events), "last_event_id": len(events) - 1}, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Dir(historyFile), 0o755))
	require.NoError(t, os.WriteFile(historyFile, append(raw, '\n'), 0o644))
}

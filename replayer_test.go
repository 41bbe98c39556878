package harvest_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
)

// writeHistory writes events as harvestctl -o json workflow history
// prints them, with the page's next cursor.
func writeHistory(t *testing.T, events []harvest.Event, next *int64) string {
	t.Helper()
	raw, err := json.MarshalIndent(map[string]any{"events": events, "next_cursor": next,
		"total_events": len(events), "last_event_id": len(events) - 1}, "", "  ")
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "history.json")
	require.NoError(t, os.WriteFile(path, raw, 0o600))
	return path
}

func TestReplayHistory(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) *history {
		t.Helper()
		h := recordWith(t, harvest.NewRegistry().MustRegister(echo, echoInput), "echo-input", "a")
		h.append(completed("1", "a"))
		h.mustTask()
		return h
	}

	t.Run("SameCodeReplays", func(t *testing.T) {
		t.Parallel()
		h := setup(t)
		require.NoError(t, harvest.ReplayHistory(h.reg, "echo-input", h.events))
		require.NoError(t, harvest.ReplayHistoryFile(h.reg, writeHistory(t, h.events, nil)))
	})

	t.Run("ChangedCodeIsNonDeterministic", func(t *testing.T) {
		t.Parallel()
		h := setup(t)
		changed := harvest.NewWorkflow("echo-input", func(ctx harvest.Context, _ string) (string, error) {
			return echo.Execute(ctx, "b").Get(ctx)
		})
		err := harvest.ReplayHistoryFile(harvest.NewRegistry().MustRegister(echo, changed), writeHistory(t, h.events, nil))
		var nd *harvest.NonDeterminismError
		require.ErrorAs(t, err, &nd)
		require.Contains(t, nd.Error(), `argument "input" differs`)
	})

	t.Run("OnePageOfALongerHistoryIsRefused", func(t *testing.T) {
		t.Parallel()
		h := setup(t)
		next := int64(1)
		require.ErrorIs(t, harvest.ReplayHistoryFile(h.reg, writeHistory(t, h.events[:2], &next)), harvest.ErrPartialHistory)
	})

	t.Run("HistoryMustStartWithWorkflowStarted", func(t *testing.T) {
		t.Parallel()
		h := setup(t)
		require.ErrorIs(t, harvest.ReplayHistory(h.reg, "", h.events[1:]), harvest.ErrNoWorkflowStarted)
	})
}

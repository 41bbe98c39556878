package runs

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/shardapi"
)

// TestOneRun: only the changes of a single path (events of one run, which
// may close) take the scalar statements.
func TestOneRun(t *testing.T) {
	t.Parallel()
	signal := harvest.NewCommand(harvest.EventSignalReceived, harvest.SignalReceivedData{SignalName: "s"})
	for _, c := range []struct {
		name string
		make func() *Changes
		one  bool
	}{
		{"AnAppend", func() *Changes {
			ch := New()
			ch.AppendEvents(newExec(), []harvest.Command{signal}, true)
			return ch
		}, true},
		{"AClose", func() *Changes {
			ch := New()
			ForceClose(ch, newExec(), shardapi.StateTerminated, "r", "")
			return ch
		}, true},
		{"TwoRuns", func() *Changes {
			ch := New()
			ch.AppendEvents(newExec(), []harvest.Command{signal}, true)
			ch.AppendEvents(newExec(), []harvest.Command{signal}, true)
			return ch
		}, false},
		{"ATaskWithATimer", func() *Changes {
			ch, _ := apply(t, false, timerStarted("1", 1000))
			return ch
		}, false},
		{"AClearedTask", func() *Changes {
			ch := New()
			ch.ClearWorkflowTask(newExec())
			return ch
		}, false},
		{"AWakeWithoutEvents", func() *Changes {
			ch := New()
			ch.AppendEvents(newExec(), nil, true)
			return ch
		}, false},
		{"Nothing", New, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.one, c.make().oneRun() != nil)
		})
	}
}

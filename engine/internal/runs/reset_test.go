package runs

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/shardapi"
)

// history makes a history of the given event types, each event's data
// naming id (its activity, timer or command).
func history(events ...string) []harvest.Event {
	h := make([]harvest.Event, len(events))
	for i, ev := range events {
		var typ, id string
		_, _ = fmt.Sscanf(ev, "%s %s", &typ, &id)
		h[i] = harvest.Event{EventID: int64(i), Type: harvest.EventType(typ),
			Data: []byte(fmt.Sprintf(`{"activity_id":%q,"timer_id":%q,"command_id":%q}`, id, id, id))}
	}
	return h
}

func TestResetPoint(t *testing.T) {
	t.Parallel()
	// 0 start; task 1 schedules two activities; their completions; task 2
	// starts a timer; a signal; the timer fires; task 3 completes.
	h := history("WorkflowStarted", "ActivityScheduled 1", "ActivityScheduled 2", "ActivityCompleted 1", "ActivityCompleted 2",
		"TimerStarted 3", "SignalReceived", "TimerFired 3", "WorkflowCompleted")
	for _, c := range []struct {
		name    string
		point   string
		eventID int64
		want    int64
		bad     bool
	}{
		{name: "first", point: ResetFirst, want: 0},
		{name: "last task", point: ResetLastTask, want: 7},
		{name: "an input before a command", eventID: 4, want: 4},
		{name: "the last command of a task", eventID: 2, want: 2},
		{name: "an input before an input", eventID: 3, want: 3},
		{name: "inside a task's commands", eventID: 1, bad: true},
		{name: "the close", eventID: 8, bad: true},
		{name: "past the end", eventID: 9, bad: true},
		{name: "before the start", eventID: -1, bad: true},
		{name: "an unknown name", point: "middle", bad: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ResetPoint(h, c.point, c.eventID)
			if c.bad {
				require.ErrorIs(t, err, shardapi.ErrInvalidArgument)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.want, got)
		})
	}
	t.Run("last task of a run waiting on its first task's activity", func(t *testing.T) {
		got, err := ResetPoint(history("WorkflowStarted", "ActivityScheduled 1", "ActivityCompleted 1"), ResetLastTask, 0)
		require.NoError(t, err)
		require.Equal(t, int64(0), got)
	})
}

func TestPending(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		prefix []harvest.Event
		want   []int64 // the pending events' ids
	}{
		{name: "nothing", prefix: history("WorkflowStarted")},
		{name: "an activity without its completion",
			prefix: history("WorkflowStarted", "ActivityScheduled 1", "ActivityScheduled 2", "ActivityCompleted 2"), want: []int64{1}},
		{name: "closed, failed, timed out or cancelled activities",
			prefix: history("WorkflowStarted", "ActivityScheduled 1", "ActivityScheduled 2", "ActivityScheduled 3", "ActivityScheduled 4",
				"ActivityFailed 1", "ActivityTimedOut 2", "ActivityCancelRequested 3", "ActivityCompleted 4")},
		{name: "a timer, a child and an external signal",
			prefix: history("WorkflowStarted", "TimerStarted 1", "ChildWorkflowInitiated 2", "SignalExternalInitiated 3"), want: []int64{1, 2, 3}},
		{name: "fired, cancelled, started and delivered",
			prefix: history("WorkflowStarted", "TimerStarted 1", "TimerStarted 2", "ChildWorkflowInitiated 3", "SignalExternalInitiated 4",
				"ChildWorkflowInitiated 5", "SignalExternalInitiated 6",
				"TimerFired 1", "TimerCanceled 2", "ChildWorkflowStarted 3", "ExternalSignalDelivered 4", "ChildWorkflowStartFailed 5",
				"ExternalSignalFailed 6")},
		{name: "ids of different kinds do not meet",
			prefix: history("WorkflowStarted", "ActivityScheduled 1", "TimerStarted 1", "TimerFired 1"), want: []int64{1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []int64
			for _, ev := range pending(c.prefix) {
				got = append(got, ev.EventID)
			}
			require.Equal(t, c.want, got)
		})
	}
}

package runs

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
)

// Resets (design-notes, "Reset"; internal/intake/reset.go tells the
// whole story): a reset replaces the current run of a chain by a new run
// of the same chain whose history is a prefix 0..E of one of the chain's
// runs (the source), followed by the signals the source received after
// E. It is a hand-over, like a continue-as-new: the run it replaces
// gives the new run its workflow id's slot, its concurrency slot, its
// timeout timers and its completion callbacks, and continued_to names
// the new run, so whoever addresses the old run reaches the new one.

// The named reset points.
const (
	// ResetFirst is event 0: the first workflow task runs again.
	ResetFirst = "first"
	// ResetLastTask is the event before the last task's commands: the
	// last task runs again.
	ResetLastTask = "last_task"
)

// ResetPoint is the event a reset of history h goes back to: 0 for
// ResetFirst, the event before the last run of command events for
// ResetLastTask, else eventID when it is a point. A point is an event
// that closes no run and is not followed by a command of the same task:
// h[E] and h[E+1] are not both commands, so the prefix 0..E holds whole
// tasks' commands and replays as the code ran it.
func ResetPoint(h []harvest.Event, point string, eventID int64) (int64, error) {
	if len(h) == 0 {
		return 0, fmt.Errorf("the run has no history: %w", shardapi.ErrInvalidArgument)
	}
	switch point {
	case ResetFirst:
		return 0, nil
	case ResetLastTask:
		return lastTask(h), nil
	case "":
		return eventID, checkPoint(h, eventID)
	}
	return 0, fmt.Errorf("reset point %q: want %q, %q or an event_id: %w", point, ResetFirst, ResetLastTask, shardapi.ErrInvalidArgument)
}

// lastTask is the event before the last run of command events (0 when
// there is none).
func lastTask(h []harvest.Event) int64 {
	i := len(h) - 1
	for i > 0 && !h[i].Type.IsCommand() {
		i--
	}
	for i > 0 && h[i].Type.IsCommand() {
		i--
	}
	return int64(i)
}

// checkPoint refuses an eventID of h that is not a point.
func checkPoint(h []harvest.Event, e int64) error {
	switch {
	case e < 0 || e >= int64(len(h)):
		return fmt.Errorf("event %d is not in the run's history (events 0..%d): %w", e, len(h)-1, shardapi.ErrInvalidArgument)
	case h[e].Type.IsTerminal():
		return fmt.Errorf("event %d (%s) closes the run: %w", e, h[e].Type, shardapi.ErrInvalidArgument)
	case e+1 < int64(len(h)) && h[e].Type.IsCommand() && h[e+1].Type.IsCommand():
		return fmt.Errorf("event %d (%s) is inside a workflow task's commands: pick the event before them: %w",
			e, h[e].Type, shardapi.ErrInvalidArgument)
	}
	return nil
}

// ResetRun is a reset to make: the source's history, the point, the new
// run's id and key base, and the run it replaces (Current, locked).
type ResetRun struct {
	History []harvest.Event
	Point   int64
	NewID   uuid.UUID
	Source  uuid.UUID
	KeyBase string
	Current *store.Exec
	Reason  string
}

// Reset adds a reset to the changes: the new run with its events (the
// prefix, stamped as they were, its WorkflowStarted naming the reset,
// then the later signals), what was pending at the point armed again
// (activity tasks, timers, the outbox rows of children and external
// signals, through route), and the current run closed TERMINATED when
// it is open, its continued_to the new run.
func (ch *Changes) Reset(r ResetRun, route Router) error {
	events, input, err := resetEvents(r)
	if err != nil {
		return err
	}
	if !shardapi.IsTerminal(r.Current.State) {
		ForceClose(ch, r.Current, shardapi.StateTerminated, r.Reason, r.NewID.String())
	}
	ch.update(r.Current).ContinuedTo = r.NewID
	h := &ch.handOvers
	h.olds, h.news = append(h.olds, r.Current.ID), append(h.news, r.NewID)
	h.inputs, h.next = append(h.inputs, string(InputOrNull(input))), append(h.next, int64(len(events)))
	for i, ev := range events {
		h.stamped.add(r.NewID, int64(i), string(ev.Type), string(ev.Data))
		h.at = append(h.at, ev.Timestamp)
	}
	next := &store.Exec{ID: r.NewID, WorkflowName: r.Current.WorkflowName, WorkflowID: r.Current.WorkflowID,
		State: shardapi.StateRunning, NextEventID: int64(len(events)), ChainID: r.Current.ChainID}
	return ch.rearm(next, r.History[:r.Point+1], route)
}

// resetEvents are the new run's events: the prefix with its
// WorkflowStarted naming the reset, then the source's later signals
// (updates and children's reports included), as they were; and the run's
// input.
func resetEvents(r ResetRun) ([]harvest.Event, json.RawMessage, error) {
	var started harvest.WorkflowStartedData
	if err := json.Unmarshal(r.History[0].Data, &started); err != nil {
		return nil, nil, fmt.Errorf("decode WorkflowStarted of %s: %w", r.Source, err)
	}
	started.KeyBase, started.ResetFrom, started.ResetEventID = r.KeyBase, r.Source.String(), r.Point
	data, err := json.Marshal(started)
	if err != nil {
		return nil, nil, fmt.Errorf("encode WorkflowStarted: %w", err)
	}
	events := append([]harvest.Event{{Type: harvest.EventWorkflowStarted, Data: data, Timestamp: r.History[0].Timestamp}},
		r.History[1:r.Point+1]...)
	for _, ev := range r.History[r.Point+1:] {
		if ev.Type == harvest.EventSignalReceived {
			events = append(events, ev)
		}
	}
	return events, started.Input, nil
}

// rearm arms again, for the new run ex, what its prefix left pending:
// the activities scheduled and neither closed nor cancelled (same id,
// same key), the timers started and neither fired nor cancelled (same
// fire time), and the children and external signals whose start or
// delivery is not recorded (their keys dedup what was done after the
// point).
func (ch *Changes) rearm(ex *store.Exec, prefix []harvest.Event, route Router) error {
	for _, ev := range pending(prefix) {
		c := harvest.Command{Type: ev.Type, Data: ev.Data}
		switch ev.Type {
		case harvest.EventTimerStarted:
			d, err := Payload[harvest.TimerStartedData](c)
			if err != nil || d.FireAt == nil {
				return fmt.Errorf("decode TimerStarted %d: %w", ev.EventID, err)
			}
			ch.addTimer(ex, d.TimerID, *d.FireAt)
		default:
			if _, err := ch.applyCommand(ex, c, time.Time{}, nil, route); err != nil {
				return err
			}
		}
	}
	return nil
}

// pendingRef names what an event opens or closes: an activity, a timer
// or an outbox command (a child's start, an external signal).
type pendingRef struct {
	ActivityID string `json:"activity_id"`
	TimerID    string `json:"timer_id"`
	CommandID  string `json:"command_id"`
}

// pending are the events of prefix that open something the prefix does
// not close, in order.
func pending(prefix []harvest.Event) []harvest.Event {
	open := map[string]int{}
	var order []string
	for i, ev := range prefix {
		var r pendingRef
		if json.Unmarshal(ev.Data, &r) != nil {
			continue
		}
		switch ev.Type {
		case harvest.EventActivityScheduled, harvest.EventTimerStarted, harvest.EventChildWorkflowInitiated, harvest.EventSignalExternalInitiated:
			k := refKey(ev.Type, r)
			open[k] = i
			order = append(order, k)
		case harvest.EventActivityCompleted, harvest.EventActivityFailed, harvest.EventActivityTimedOut, harvest.EventActivityCancelRequested,
			harvest.EventTimerFired, harvest.EventTimerCanceled, harvest.EventChildWorkflowStarted, harvest.EventChildWorkflowStartFailed,
			harvest.EventExternalSignalDelivered, harvest.EventExternalSignalFailed:
			delete(open, refKey(ev.Type, r))
		}
	}
	var out []harvest.Event
	for _, k := range order {
		if i, ok := open[k]; ok {
			out = append(out, prefix[i])
			delete(open, k)
		}
	}
	return out
}

// refKey is the key of what an event opens or closes.
func refKey(t harvest.EventType, r pendingRef) string {
	switch t {
	case harvest.EventActivityScheduled, harvest.EventActivityCompleted, harvest.EventActivityFailed, harvest.EventActivityTimedOut,
		harvest.EventActivityCancelRequested:
		return "activity:" + r.ActivityID
	case harvest.EventTimerStarted, harvest.EventTimerFired, harvest.EventTimerCanceled:
		return "timer:" + r.TimerID
	}
	return "command:" + r.CommandID
}

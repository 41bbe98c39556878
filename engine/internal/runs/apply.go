package runs

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
)

// A Router adds to ch the rows of a command that acts on another run (an
// external signal, a child's start): the outbox's kinds implement it, so
// that runs need not know them.
type Router func(ch *Changes, ex *store.Exec, c harvest.Command) error

// ApplyTask adds a workflow task's commands to the changes as ex's events,
// and what they imply: activity tasks, timers, cancels, the rows route
// makes of commands that act on other runs, and the run's close. now is
// the task's workflow time (a timer's fire time counts from it).
func (ch *Changes) ApplyTask(ex *store.Exec, res harvest.TaskResult, now time.Time, route Router) error {
	cmds := make([]harvest.Command, len(res.Commands))
	copy(cmds, res.Commands)
	skip := cancelledInTask(cmds)
	for i, c := range cmds {
		filled, err := ch.applyCommand(ex, c, now, skip[c.Type], route)
		if err != nil {
			return err
		}
		cmds[i] = filled
	}
	ch.AppendEvents(ex, cmds, false)
	if res.Closed {
		return ch.closeFromCommand(ex, cmds[len(cmds)-1])
	}
	ch.ClearWorkflowTask(ex)
	return nil
}

// applyCommand adds the row a command creates (activity task, timer), or
// the cancel it makes, and returns the command as recorded (a timer gets
// its fire time). The ids in cancelled are cancelled by the same task:
// they get no row.
func (ch *Changes) applyCommand(ex *store.Exec, c harvest.Command, now time.Time, cancelled map[string]bool, route Router) (harvest.Command, error) {
	switch c.Type {
	case harvest.EventActivityScheduled:
		d, err := Payload[harvest.ActivityScheduledData](c)
		if err != nil {
			return c, fmt.Errorf("decode ActivityScheduled: %w", err)
		}
		if cancelled[d.ActivityID] {
			return c, nil
		}
		return c, ch.addActivityTask(ex, d)
	case harvest.EventSignalExternalInitiated, harvest.EventChildWorkflowInitiated:
		return c, route(ch, ex, c)
	case harvest.EventTimerCanceled, harvest.EventActivityCancelRequested:
		if err := ch.addCancel(ex, c); err != nil {
			return c, fmt.Errorf("decode %s: %w", c.Type, err)
		}
		return c, nil
	case harvest.EventWorkflowContinuedAsNew:
		return fillContinueAsNew(ex, c)
	case harvest.EventTimerStarted:
		d, err := Payload[harvest.TimerStartedData](c)
		if err != nil {
			return c, fmt.Errorf("decode TimerStarted: %w", err)
		}
		fireAt := now.Add(time.Duration(d.DurationMS) * time.Millisecond)
		d.FireAt = &fireAt
		if !cancelled[d.TimerID] {
			ch.addTimer(ex, d.TimerID, fireAt)
		}
		return harvest.NewCommand(c.Type, d), nil
	}
	return c, nil
}

// closeFromCommand closes ex as its task's last command says.
func (ch *Changes) closeFromCommand(ex *store.Exec, last harvest.Command) error {
	switch last.Type {
	case harvest.EventWorkflowCompleted:
		d, err := Payload[harvest.WorkflowCompletedData](last)
		if err != nil {
			return fmt.Errorf("decode WorkflowCompleted: %w", err)
		}
		ch.Close(ex, shardapi.StateCompleted, InputOrNull(d.Output), nil)
		return nil
	case harvest.EventWorkflowFailed:
		d, err := Payload[harvest.WorkflowFailedData](last)
		if err != nil {
			return fmt.Errorf("decode WorkflowFailed: %w", err)
		}
		info, err := json.Marshal(d.Error)
		if err != nil {
			return fmt.Errorf("encode workflow error: %w", err)
		}
		ch.Close(ex, shardapi.StateFailed, nil, info)
		return nil
	case harvest.EventWorkflowCancelled:
		// What a forced cancel writes: no output, no error.
		ch.Close(ex, shardapi.StateCancelled, nil, nil)
		return nil
	case harvest.EventWorkflowContinuedAsNew:
		return ch.closeContinuedAsNew(ex, last)
	}
	return fmt.Errorf("close run %s: unexpected last command %s", ex.ID, last.Type)
}

// Payload is a command's payload as T: the value the command was made
// from when it carries one, else its Data decoded.
func Payload[T any](c harvest.Command) (T, error) {
	if v, ok := c.Payload.(T); ok {
		return v, nil
	}
	var v T
	err := json.Unmarshal(c.Data, &v)
	return v, err
}

// InputOrNull is a recorded payload: b, or JSON null when empty.
func InputOrNull(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}

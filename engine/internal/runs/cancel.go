package runs

import (
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/store"
)

// Cancel commands of workflow code (harvest.WithCancel, scope.go).
//
// A TimerCanceled deletes the timer's row and an ActivityCancelRequested
// deletes the activity's task if no attempt runs, else sets its
// cancel_requested (migration 010), both in the workflow task's
// transaction, so a cancelled timer never fires and a cancelled activity
// never starts again. A running attempt learns of the flag through its
// heartbeat: Heartbeat returns a *harvest.CanceledError and the attempt's
// context is cancelled. Its outcome is recorded as usual but never
// retried. A timer or activity started and cancelled by the same task gets
// no row at all.

// cancelRows are the timers and activity tasks the changes cancel.
type cancelRows struct {
	timerExecs, actExecs []uuid.UUID
	timerIDs, actIDs     []string
}

// cancelledInTask is the set of timers and activities that a task's
// commands both create and cancel: they need no row.
func cancelledInTask(cmds []harvest.Command) map[harvest.EventType]map[string]bool {
	var out map[harvest.EventType]map[string]bool
	for _, c := range cmds {
		var made harvest.EventType
		var id string
		switch c.Type {
		case harvest.EventTimerCanceled:
			d, _ := Payload[harvest.TimerCanceledData](c)
			made, id = harvest.EventTimerStarted, d.TimerID
		case harvest.EventActivityCancelRequested:
			d, _ := Payload[harvest.ActivityCancelRequestedData](c)
			made, id = harvest.EventActivityScheduled, d.ActivityID
		default:
			continue
		}
		if out == nil {
			out = map[harvest.EventType]map[string]bool{}
		}
		if out[made] == nil {
			out[made] = map[string]bool{}
		}
		out[made][id] = true
	}
	return out
}

// addCancel adds what a cancel command does.
func (ch *Changes) addCancel(ex *store.Exec, c harvest.Command) error {
	switch c.Type {
	case harvest.EventTimerCanceled:
		d, err := Payload[harvest.TimerCanceledData](c)
		if err != nil {
			return err
		}
		ch.cancels.timerExecs = append(ch.cancels.timerExecs, ex.ID)
		ch.cancels.timerIDs = append(ch.cancels.timerIDs, d.TimerID)
	case harvest.EventActivityCancelRequested:
		d, err := Payload[harvest.ActivityCancelRequestedData](c)
		if err != nil {
			return err
		}
		ch.cancels.actExecs = append(ch.cancels.actExecs, ex.ID)
		ch.cancels.actIDs = append(ch.cancels.actIDs, d.ActivityID)
	}
	return nil
}

// queueCancels queues the changes' cancels on b.
func (ch *Changes) queueCancels(b *pgx.Batch) {
	c := &ch.cancels
	if len(c.timerExecs) > 0 {
		store.QueueCancelTimers(b, c.timerExecs, c.timerIDs)
	}
	if len(c.actExecs) > 0 {
		store.QueueCancelActivities(b, c.actExecs, c.actIDs)
	}
}

package runs

import (
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/harvestd/harvest/engine/internal/store"
)

// A single path (a signal, a cancel, a terminate, a timer, a timeout, an
// activity outcome) changes one run: its changes go out as the scalar
// statements of store/single_run.go, which cost a quarter less than the
// batched ones for one run (docs/performance.md, "the gate on an idle
// machine"). The rule of what a change does stays here, in one place.

// QueueSingle queues the changes of a single path on b: the scalar
// statements when they change one run only (oneRun), else Queue's.
func (ch *Changes) QueueSingle(b *pgx.Batch) {
	if u := ch.oneRun(); u != nil {
		ch.queueOneRun(b, u)
		return
	}
	ch.Queue(b)
}

// oneRun is the run of changes the scalar statements can write: events
// appended to one run, which may close, and nothing else (no activity
// task, timer, cancel, hand-over, outbox row or grant, no stamps); nil
// otherwise.
func (ch *Changes) oneRun() *Update {
	if len(ch.updates) != 1 || ch.Stamps != nil || len(ch.tasks.ids) > 0 || len(ch.timers.ids) > 0 ||
		len(ch.handOvers.olds) > 0 || len(ch.cancels.timerExecs)+len(ch.cancels.actExecs) > 0 || ch.Outbox.Len() > 0 ||
		len(ch.grants) > 0 {
		return nil
	}
	u := ch.updates[0]
	if (u.Clear || !u.Appended) && !u.Closes {
		return nil // a cleared task, or a wake with nothing appended: the batched UPDATE says it
	}
	for _, id := range ch.events.ids {
		if id != u.ID {
			return nil
		}
	}
	return u
}

// queueOneRun queues u's run's events, its advance, and its close with
// what the close clears.
func (ch *Changes) queueOneRun(b *pgx.Batch, u *Update) {
	if e := &ch.events; len(e.ids) > 0 {
		store.QueueAppendRunEvents(b, u.ID, e.nums, e.types, e.data, ch.Ahead.Microseconds())
	}
	if u.Appended {
		store.QueueAdvanceRun(b, u.ID, u.Next, u.Wake)
	}
	if u.Closes {
		store.QueueCloseRun(b, u.ID, u.State, store.NullJSON(u.Output), store.NullJSON(u.Err), u.ReleaseSlot)
		ch.queueOneClose(b, u.ID)
	}
}

// queueOneClose clears what the closed run leaves behind: activity tasks,
// timers, and pending completion callbacks and outbox reports become due.
func (ch *Changes) queueOneClose(b *pgx.Batch, id uuid.UUID) {
	store.QueueDeleteRunTasks(b, id)
	store.QueueDeleteRunTimers(b, id)
	store.QueueRunCallbacksDue(b, id).Exec(func(tag pgconn.CommandTag) error {
		ch.callbacksDue = ch.callbacksDue || tag.RowsAffected() > 0
		return nil
	})
	store.QueueCloseOutbox(b, []uuid.UUID{id}).Exec(func(tag pgconn.CommandTag) error {
		ch.outboxDue = ch.outboxDue || tag.RowsAffected() > 0
		return nil
	})
}

package store

import (
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// The scalar statements of a change set of one run, which the single
// paths (a signal, a cancel, a terminate, a timer, a timeout, an
// activity outcome) send: the batched statements' arrays and joins cost a
// quarter of a single signal's transaction (docs/performance.md, "the
// gate on an idle machine"). runs.Changes chooses them.

// QueueAppendRunEvents queues the events of run id with event ids ids,
// types and data (JSON text), stamped with the transaction's time plus
// ahead microseconds (workflow time).
func QueueAppendRunEvents(b *pgx.Batch, id uuid.UUID, ids []int64, types, data []string, ahead int64) {
	b.Queue(`
		INSERT INTO harvest_events (execution_id, event_id, event_type, data, created_at)
		SELECT $1, u.event_id, u.event_type, u.data::jsonb, now() + $5 * interval '1 microsecond'
		  FROM unnest($2::bigint[], $3::text[], $4::text[]) AS u(event_id, event_type, data)`,
		id, ids, types, data, ahead)
}

// QueueAdvanceRun queues run id's next event id after an append; wake
// makes its workflow task due now.
func QueueAdvanceRun(b *pgx.Batch, id uuid.UUID, next int64, wake bool) {
	b.Queue(`
		UPDATE harvest_executions
		   SET next_event_id = $2, updated_at = now(),
		       wf_task_due_at = CASE WHEN $3 THEN least(coalesce(wf_task_due_at, now()), now()) ELSE wf_task_due_at END
		 WHERE execution_id = $1`, id, next, wake)
}

// QueueCloseRun queues the close of run id in state with its output and
// error (nil or JSON text); release gives up the run's slot.
func QueueCloseRun(b *pgx.Batch, id uuid.UUID, state string, output, errInfo any, release bool) {
	b.Queue(`
		UPDATE harvest_executions
		   SET state = $2, output = $3, error = $4, completed_at = now(), updated_at = now(),
		       wf_task_due_at = NULL, wf_task_attempt = 0, last_error = NULL,
		       holds_slot = holds_slot AND NOT $5
		 WHERE execution_id = $1`, id, state, output, errInfo, release)
}

// QueueDeleteRunTasks queues the delete of run id's activity tasks.
func QueueDeleteRunTasks(b *pgx.Batch, id uuid.UUID) {
	b.Queue(`DELETE FROM harvest_tasks WHERE execution_id = $1`, id)
}

// QueueDeleteRunTimers queues the delete of run id's timers.
func QueueDeleteRunTimers(b *pgx.Batch, id uuid.UUID) {
	b.Queue(`DELETE FROM harvest_timers WHERE execution_id = $1`, id)
}

// QueueRunCallbacksDue queues run id's pending completion callbacks to be
// delivered now (the run closed); the caller reads how many became due
// from its command tag.
func QueueRunCallbacksDue(b *pgx.Batch, id uuid.UUID) *pgx.QueuedQuery {
	return b.Queue(`
		UPDATE harvest_callbacks SET status = 'due', next_attempt_at = now()
		 WHERE execution_id = $1 AND status = 'pending'`, id)
}

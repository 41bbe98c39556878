package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest"
)

// LeaseGrace is added to start-to-close for an activity task's lock: a
// task still running after that (its engine crashed without losing the
// lease) is reclaimed as a new attempt.
const LeaseGrace = 5 * time.Second

// ClaimedTask is an activity task claimed for one attempt, as the claim
// returns it.
type ClaimedTask struct {
	TaskID        int64
	ExecutionID   uuid.UUID
	WorkflowName  string
	WorkflowID    string
	ActivityID    string
	Name          string
	Input         json.RawMessage
	Key           string
	Options       harvest.ActivityOptions
	Attempt       int
	CloseDeadline *time.Time
	Heartbeat     json.RawMessage
	// CancelRequested: the workflow cancelled the activity before this
	// (reclaimed) attempt was claimed; it is not started.
	CancelRequested bool
	ClaimedAt       time.Time // workflow time (the database's clock plus the clock's offset)
	// Slot is the concurrency slot the attempt holds, as the lock of its
	// outcome read it (nil: none, or not read).
	Slot *harvest.ActivitySlot
}

// Due activity tasks, by priority and then in scheduled order (due on
// workflow time, $4 the clock's offset; locks expire on the database's):
// hi takes them from the tasks of a priority other than the default, lo
// from those of the default (migration 025: the default's tasks go into
// the due index alone), and c the first of both. The poll after a nudge
// reads the pending tasks' partial indexes only, in index order; running
// tasks whose lease expired or whose claim is older than this owner's
// epoch are reclaimed by the first poll and the ticker's, as tasks of the
// default priority. harvest_tasks is a queue: between vacuums it holds few
// live rows among many dead ones, which the planner takes for a tiny table
// to scan whole, so the polls forbid that.
const (
	dueSQL         = `status = 'pending' AND scheduled_at <= now() + $4 * interval '1 microsecond'`
	reclaimableSQL = `status = 'running' AND NOT async AND (locked_until < now() OR claim_epoch < $1)`
	claimHiSQL     = `hi AS (
		SELECT task_id, priority, scheduled_at FROM harvest_tasks
		 WHERE ` + dueSQL + ` AND priority <> 3
		 ORDER BY priority, scheduled_at
		 LIMIT $2 FOR UPDATE SKIP LOCKED)`
	claimFirstSQL = `c AS (
		SELECT task_id FROM (SELECT * FROM hi UNION ALL SELECT * FROM lo) d
		 ORDER BY priority, scheduled_at LIMIT $2)`
	claimDueSQL = claimHiSQL + `, lo AS (
		SELECT task_id, priority, scheduled_at FROM harvest_tasks
		 WHERE ` + dueSQL + ` AND priority = 3
		 ORDER BY scheduled_at
		 LIMIT $2 FOR UPDATE SKIP LOCKED), ` + claimFirstSQL
	claimDueOrReclaimSQL = claimHiSQL + `, lo AS (
		SELECT task_id, priority, scheduled_at FROM harvest_tasks
		 WHERE (` + dueSQL + ` AND priority = 3) OR (` + reclaimableSQL + `)
		 ORDER BY scheduled_at
		 LIMIT $2 FOR UPDATE SKIP LOCKED), ` + claimFirstSQL
)

// QueueNoSeqScan queues the transaction's ban on sequential scans, for
// the claim's poll (see claimDueSQL).
func QueueNoSeqScan(b *pgx.Batch) { b.Queue(`SET LOCAL enable_seqscan = off`) }

// ClaimTasks claims up to limit due tasks (and, with reclaim, running ones
// whose lock expired or whose claim is of an epoch before epoch) for one
// attempt each, locked for their start-to-close timeout plus grace; ahead
// is the clock's offset in microseconds. A task of an activity under lim
// is claimed only into a free slot of its key and with a token of its
// bucket (activity_flow.go). fn gets each claimed task.
func ClaimTasks(ctx context.Context, q Querier, epoch int64, limit int, reclaim bool, grace time.Duration, ahead int64,
	lim ActivityLimits, fn func(ClaimedTask)) error {
	due := claimDueSQL
	if reclaim {
		due = claimDueOrReclaimSQL
	}
	args := []any{epoch, limit, grace.Milliseconds(), ahead}
	with, set := due, ""
	if lim.Limited() {
		with, set = limitedClaim(reclaim), `, flow_key = c.fk,
			       flow_since = CASE WHEN c.fk IS NULL THEN NULL WHEN t.status = 'running' THEN t.flow_since ELSE clock_timestamp() END`
		args = append(args, lim.Names, lim.Paths, lim.Max, lim.RatePaths, lim.Rate, lim.Burst)
	}
	rows, err := q.Query(ctx, `
			WITH `+with+`
			UPDATE harvest_tasks t
			   SET status = 'running', attempt = t.attempt + 1, claim_epoch = $1, async = false, async_deadline = NULL,
			       locked_until = now() + ((t.options->>'start_to_close_ms')::bigint + $3) * interval '1 millisecond'`+set+`
			  FROM c, harvest_executions e
			 WHERE t.task_id = c.task_id AND e.execution_id = t.execution_id
			RETURNING t.task_id, t.execution_id, e.workflow_name, e.workflow_id, t.activity_id, t.activity_name,
			          t.input, t.idempotency_key, t.options, t.attempt, t.close_deadline, t.heartbeat_details,
			          t.cancel_requested, now() + $4 * interval '1 microsecond'`, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var t ClaimedTask
		var opts []byte
		err := rows.Scan(&t.TaskID, &t.ExecutionID, &t.WorkflowName, &t.WorkflowID, &t.ActivityID, &t.Name,
			&t.Input, &t.Key, &opts, &t.Attempt, &t.CloseDeadline, &t.Heartbeat, &t.CancelRequested, &t.ClaimedAt)
		if err == nil {
			err = json.Unmarshal(opts, &t.Options)
		}
		if err != nil {
			return err
		}
		fn(t)
	}
	return rows.Err()
}

// UnclaimTasks hands claimed tasks (ids at attempts, claimed under epoch)
// back to the table, as they were before the claim.
func UnclaimTasks(ctx context.Context, q Querier, ids []int64, attempts []int32, epoch int64) error {
	_, err := q.Exec(ctx, `
			UPDATE harvest_tasks t
			   SET status = 'pending', attempt = t.attempt - 1, claim_epoch = NULL, locked_until = NULL
			  FROM unnest($1::bigint[], $2::int[]) AS u(id, attempt)
			 WHERE t.task_id = u.id AND t.attempt = u.attempt AND t.status = 'running' AND t.claim_epoch = $3`,
		ids, attempts, epoch)
	return err
}

// Heartbeat records an attempt's heartbeat and details (nil: JSON null)
// and returns whether the workflow cancelled the activity; pgx.ErrNoRows
// when the attempt is no longer the task's running one.
func Heartbeat(ctx context.Context, q Querier, id int64, attempt int, details any) (bool, error) {
	var canceled bool
	err := q.QueryRow(ctx, `
			UPDATE harvest_tasks SET heartbeat_at = now(), heartbeat_details = $3
			 WHERE task_id = $1 AND attempt = $2 AND status = 'running'
			RETURNING cancel_requested`, id, attempt, details).Scan(&canceled)
	return canceled, err
}

// QueueDeleteTask queues the delete of task id.
func QueueDeleteTask(b *pgx.Batch, id int64) {
	b.Queue(`DELETE FROM harvest_tasks WHERE task_id = $1`, id)
}

// DeleteTask deletes task id.
func DeleteTask(ctx context.Context, q Querier, id int64) error {
	_, err := q.Exec(ctx, `DELETE FROM harvest_tasks WHERE task_id = $1`, id)
	return err
}

// LockedTask is a task as an outcome reads it under its lock: its
// attempt, its status, whether it is an async attempt whose lock expired,
// and the concurrency slot it holds (nil: none).
type LockedTask struct {
	Attempt int
	Status  string
	Expired bool
	Slot    *harvest.ActivitySlot
}

// slotColumns are the columns slotScan reads: the task's slot, if it
// holds one, and the moment of the read.
const slotColumns = `CASE WHEN status = 'running' THEN flow_key END, flow_since, clock_timestamp()`

// slotScan scans slotColumns.
type slotScan struct {
	key   *string
	since *time.Time
	now   time.Time
}

func (s *slotScan) dest() []any { return []any{&s.key, &s.since, &s.now} }

// slot is the slot read (nil: none), given back after the read.
func (s *slotScan) slot() *harvest.ActivitySlot {
	if s.key == nil || s.since == nil {
		return nil
	}
	return &harvest.ActivitySlot{Key: *s.key, Since: *s.since, Until: s.now}
}

// QueueLockTask queues the lock of task id; fn gets it, and is not
// called when the task is gone.
func QueueLockTask(b *pgx.Batch, id int64, fn func(LockedTask)) {
	b.Queue(`SELECT attempt, status, async AND locked_until < now(), `+slotColumns+`
	           FROM harvest_tasks WHERE task_id = $1 FOR UPDATE`, id).
		QueryRow(func(row pgx.Row) error {
			var (
				t    LockedTask
				slot slotScan
			)
			err := row.Scan(append([]any{&t.Attempt, &t.Status, &t.Expired}, slot.dest()...)...)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("lock activity task: %w", err)
			}
			t.Slot = slot.slot()
			fn(t)
			return nil
		})
}

// retrySQL makes a failed attempt's task pending again: failed at the
// transaction's workflow time ($4 the clock's offset), due $2 µs later,
// unless that is past the schedule-to-close deadline or the workflow
// cancelled the activity.
const retrySQL = `
	WITH f AS (SELECT now() + $4 * interval '1 microsecond' AS at)
	UPDATE harvest_tasks
	   SET status = 'pending', last_failed_at = f.at, scheduled_at = f.at + $2 * interval '1 microsecond',
	       locked_until = NULL, last_error = $3, async = false, async_deadline = NULL
	  FROM f
	 WHERE task_id = $1
	   AND NOT cancel_requested
	   AND (close_deadline IS NULL OR f.at + $2 * interval '1 microsecond' < close_deadline)`

// RetryTask makes a failed attempt's task pending again, due delay
// microseconds after the failure (see retrySQL), with lastErr; false when
// it is past its deadline or cancelled.
func RetryTask(ctx context.Context, q Querier, id int64, delay int64, lastErr string, ahead int64) (bool, error) {
	tag, err := q.Exec(ctx, retrySQL, id, delay, lastErr, ahead)
	return tag.RowsAffected() == 1, err
}

// QueueLockRunningTasks queues the lock of the running tasks among ids
// (sorted: locks are taken in task order); fn gets each one's attempt and
// the slot it holds (nil: none).
func QueueLockRunningTasks(b *pgx.Batch, ids []int64, fn func(id int64, attempt int, slot *harvest.ActivitySlot)) {
	b.Queue(`
			SELECT task_id, attempt, `+slotColumns+` FROM harvest_tasks
			 WHERE task_id = ANY($1) AND status = 'running' ORDER BY task_id FOR UPDATE`, ids).
		Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var (
					id      int64
					attempt int
					slot    slotScan
				)
				if err := rows.Scan(append([]any{&id, &attempt}, slot.dest()...)...); err != nil {
					return err
				}
				fn(id, attempt, slot.slot())
			}
			return rows.Err()
		})
}

// QueueDeleteTasks queues the delete of tasks ids.
func QueueDeleteTasks(b *pgx.Batch, ids []int64) {
	b.Queue(`DELETE FROM harvest_tasks WHERE task_id = ANY($1)`, ids)
}

// QueueNow queues a read of the transaction's now() into now.
func QueueNow(b *pgx.Batch, now *time.Time) {
	b.Queue(`SELECT now()`).QueryRow(func(row pgx.Row) error { return row.Scan(now) })
}

// QueueCancelActivities queues the cancel of the activities
// activityIDs[i] of runs execs[i]: a pending task is deleted, a running
// one is asked to stop (its heartbeat learns it).
func QueueCancelActivities(b *pgx.Batch, execs []uuid.UUID, activityIDs []string) {
	b.Queue(`
			WITH u AS (SELECT * FROM unnest($1::uuid[], $2::text[]) AS u(id, activity_id)),
			     d AS (DELETE FROM harvest_tasks t USING u
			            WHERE t.execution_id = u.id AND t.activity_id = u.activity_id AND t.status = 'pending')
			UPDATE harvest_tasks t SET cancel_requested = true
			  FROM u
			 WHERE t.execution_id = u.id AND t.activity_id = u.activity_id AND t.status = 'running'`,
		execs, activityIDs)
}

// insertTasksSQL inserts activity tasks, those flagged r claimed as
// claimActivities claims (the lock counting from the insert), and returns
// every row's id, whether it was claimed, its schedule-to-close deadline
// and the claim's time, both in workflow time ($12 is the clock's offset;
// the lock is on the database's time).
const insertTasksSQL = `
	INSERT INTO harvest_tasks (execution_id, activity_id, activity_name, queue, input, idempotency_key, options,
	                           priority, close_deadline, status, attempt, claim_epoch, locked_until)
	SELECT id, a, n, q, i::jsonb, k, o::jsonb, coalesce((o::jsonb->>'priority')::smallint, 3), now() + $12 * interval '1 microsecond' + c * interval '1 millisecond',
	       CASE WHEN r THEN 'running' ELSE 'pending' END, CASE WHEN r THEN 1 ELSE 0 END,
	       CASE WHEN r THEN $10::bigint END,
	       CASE WHEN r THEN clock_timestamp() + ((o::jsonb->>'start_to_close_ms')::bigint + $11) * interval '1 millisecond' END
	  FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bigint[],
	              $9::bool[]) AS u(id, a, n, q, i, k, o, c, r)
	RETURNING task_id, execution_id, activity_id, status = 'running', close_deadline,
	          clock_timestamp() + $12 * interval '1 microsecond'`

// NewTasks are activity tasks to insert, one per index: the run, the
// activity id, name and queue, the input and options (JSON text), the
// idempotency key and the schedule-to-close timeout in ms (nil: none).
type NewTasks struct {
	IDs                                    []uuid.UUID
	ActivityIDs, Names, Queues, Keys, Opts []string
	Inputs                                 []*string
	CloseMS                                []*int64
}

// InsertedTask is a row the insert of NewTasks returns: whether it was
// inserted claimed, its schedule-to-close deadline and the claim's time
// (both in workflow time).
type InsertedTask struct {
	TaskID      int64
	ExecutionID uuid.UUID
	ActivityID  string
	Claimed     bool
	Deadline    *time.Time
	Now         time.Time
}

// QueueInsertTasks queues the insert of t, those flagged in claim
// inserted claimed for epoch (their lock: start-to-close plus graceMS
// from now), timed aheadMicros ahead of the database's clock; with fn,
// each inserted row is passed to it.
func QueueInsertTasks(b *pgx.Batch, t NewTasks, claim []bool, epoch, graceMS, aheadMicros int64, fn func(InsertedTask) error) {
	q := b.Queue(insertTasksSQL, t.IDs, t.ActivityIDs, t.Names, t.Queues, t.Inputs, t.Keys, t.Opts, t.CloseMS, claim,
		epoch, graceMS, aheadMicros)
	if fn == nil {
		return
	}
	q.Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var r InsertedTask
			if err := rows.Scan(&r.TaskID, &r.ExecutionID, &r.ActivityID, &r.Claimed, &r.Deadline, &r.Now); err != nil {
				return err
			}
			if err := fn(r); err != nil {
				return err
			}
		}
		return rows.Err()
	})
}

// QueueDeleteRunsTasks queues the delete of the activity tasks of runs
// ids.
func QueueDeleteRunsTasks(b *pgx.Batch, ids []uuid.UUID) {
	b.Queue(`DELETE FROM harvest_tasks WHERE execution_id = ANY($1)`, ids)
}

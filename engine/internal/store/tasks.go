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
}

// Due activity tasks, in scheduled order (due on workflow time, $4 the
// clock's offset; locks expire on the database's). The poll after a nudge reads the
// pending tasks' partial index only, in index order; running tasks whose
// lease expired or whose claim is older than this owner's epoch are
// reclaimed by the first poll and the ticker's. harvest_tasks is a queue:
// between vacuums it holds few live rows among many dead ones, which the
// planner takes for a tiny table to scan whole, so the polls forbid that.
const (
	claimDueSQL = `
		SELECT task_id FROM harvest_tasks
		 WHERE status = 'pending' AND scheduled_at <= now() + $4 * interval '1 microsecond'
		 ORDER BY scheduled_at
		 LIMIT $2 FOR UPDATE SKIP LOCKED`
	claimDueOrReclaimSQL = `
		SELECT task_id FROM harvest_tasks
		 WHERE (status = 'pending' AND scheduled_at <= now() + $4 * interval '1 microsecond')
		    OR (status = 'running' AND NOT async AND (locked_until < now() OR claim_epoch < $1))
		 ORDER BY scheduled_at
		 LIMIT $2 FOR UPDATE SKIP LOCKED`
)

// QueueNoSeqScan queues the transaction's ban on sequential scans, for
// the claim's poll (see claimDueSQL).
func QueueNoSeqScan(b *pgx.Batch) { b.Queue(`SET LOCAL enable_seqscan = off`) }

// ClaimTasks claims up to limit due tasks (and, with reclaim, running ones
// whose lock expired or whose claim is of an epoch before epoch) for one
// attempt each, locked for their start-to-close timeout plus grace; ahead
// is the clock's offset in microseconds. fn gets each claimed task.
func ClaimTasks(ctx context.Context, q Querier, epoch int64, limit int, reclaim bool, grace time.Duration, ahead int64, fn func(ClaimedTask)) error {
	due := claimDueSQL
	if reclaim {
		due = claimDueOrReclaimSQL
	}
	rows, err := q.Query(ctx, `
			WITH c AS (`+due+`)
			UPDATE harvest_tasks t
			   SET status = 'running', attempt = t.attempt + 1, claim_epoch = $1, async = false, async_deadline = NULL,
			       locked_until = now() + ((t.options->>'start_to_close_ms')::bigint + $3) * interval '1 millisecond'
			  FROM c, harvest_executions e
			 WHERE t.task_id = c.task_id AND e.execution_id = t.execution_id
			RETURNING t.task_id, t.execution_id, e.workflow_name, e.workflow_id, t.activity_id, t.activity_name,
			          t.input, t.idempotency_key, t.options, t.attempt, t.close_deadline, t.heartbeat_details,
			          t.cancel_requested, now() + $4 * interval '1 microsecond'`,
		epoch, limit, grace.Milliseconds(), ahead)
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

// QueueLockTask queues the lock of task id; fn gets its attempt, its
// status and whether it is an async attempt whose lock expired, and is
// not called when the task is gone.
func QueueLockTask(b *pgx.Batch, id int64, fn func(attempt int, status string, expired bool)) {
	b.Queue(`SELECT attempt, status, async AND locked_until < now() FROM harvest_tasks WHERE task_id = $1 FOR UPDATE`, id).
		QueryRow(func(row pgx.Row) error {
			var (
				attempt int
				status  string
				expired bool
			)
			err := row.Scan(&attempt, &status, &expired)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("lock activity task: %w", err)
			}
			fn(attempt, status, expired)
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
// (sorted: locks are taken in task order); fn gets each one's attempt.
func QueueLockRunningTasks(b *pgx.Batch, ids []int64, fn func(id int64, attempt int)) {
	b.Queue(`
			SELECT task_id, attempt FROM harvest_tasks
			 WHERE task_id = ANY($1) AND status = 'running' ORDER BY task_id FOR UPDATE`, ids).
		Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var (
					id      int64
					attempt int
				)
				if err := rows.Scan(&id, &attempt); err != nil {
					return err
				}
				fn(id, attempt)
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

package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Async completion: the task tokens, harvest_task_tokens (a token's hash
// with the task and attempt it was minted for, and the answer its holder
// gave), and the activity tasks' async attempts, left open (running,
// async set) for the token's holder until their lock expires.

// InsertTaskToken stores hash, a task token's, for attempt attempt of
// task taskID; false when that attempt is not the task's running one.
func InsertTaskToken(ctx context.Context, q Querier, hash []byte, taskID int64, attempt int) (bool, error) {
	tag, err := q.Exec(ctx, `
			INSERT INTO harvest_task_tokens (token_hash, execution_id, task_id, activity_id, attempt)
			SELECT $1, execution_id, task_id, activity_id, attempt FROM harvest_tasks
			 WHERE task_id = $2 AND attempt = $3 AND status = 'running'`, hash, taskID, attempt)
	return tag.RowsAffected() != 0, err
}

// MarkAsync leaves attempt attempt of task taskID open for its token's
// holder: its deadline left microseconds from now, its lock until then or
// for the heartbeat timeout of heartbeat microseconds (0: none) if that
// is sooner. False when the attempt is not the task's running one.
func MarkAsync(ctx context.Context, q Querier, taskID int64, attempt int, left, heartbeat int64) (bool, error) {
	tag, err := q.Exec(ctx, `
			WITH d AS (SELECT now() + $3 * interval '1 microsecond' AS at)
			UPDATE harvest_tasks SET async = true, async_deadline = d.at,
			       locked_until = CASE WHEN $4 > 0 THEN LEAST(d.at, now() + $4 * interval '1 microsecond') ELSE d.at END
			  FROM d
			 WHERE task_id = $1 AND attempt = $2 AND status = 'running'`,
		taskID, attempt, left, heartbeat)
	return err == nil && tag.RowsAffected() == 1, err
}

// TaskToken is a task token's record: the task and attempt it was minted
// for, and the answer given ("completed" or "failed"; nil: none yet).
type TaskToken struct {
	TaskID     int64
	ActivityID string
	Attempt    int
	Answer     *string
}

// QueueLockTaskToken queues the lock of the record of the token whose
// hash is hash, minted for run id; *tok is set to it once the batch has
// run, and left nil when there is none.
func QueueLockTaskToken(b *pgx.Batch, hash []byte, id uuid.UUID, tok **TaskToken) {
	b.Queue(`SELECT task_id, activity_id, attempt, answer FROM harvest_task_tokens
		WHERE token_hash = $1 AND execution_id = $2 FOR UPDATE`, hash, id).
		QueryRow(func(row pgx.Row) error {
			var r TaskToken
			err := row.Scan(&r.TaskID, &r.ActivityID, &r.Attempt, &r.Answer)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("lock task token: %w", err)
			}
			*tok = &r
			return nil
		})
}

// RecordTokenAnswer records answer as the answer to the token whose hash
// is hash.
func RecordTokenAnswer(ctx context.Context, q Querier, hash []byte, answer string) error {
	_, err := q.Exec(ctx, `UPDATE harvest_task_tokens SET answer = $2, answered_at = now() WHERE token_hash = $1`,
		hash, answer)
	return err
}

// LockAsyncTask locks task taskID and reads the attempt a token names
// (its run's workflow name and id left empty) and its status; found is
// false when the task is gone.
func LockAsyncTask(ctx context.Context, q Querier, taskID int64) (t ClaimedTask, status string, found bool, err error) {
	var (
		opts []byte
		slot slotScan
	)
	err = q.QueryRow(ctx, `
		SELECT task_id, execution_id, activity_id, activity_name, idempotency_key, options, attempt, close_deadline, status,
		       `+slotColumns+`
		  FROM harvest_tasks WHERE task_id = $1 FOR UPDATE`, taskID).
		Scan(append([]any{&t.TaskID, &t.ExecutionID, &t.ActivityID, &t.Name, &t.Key, &opts, &t.Attempt, &t.CloseDeadline, &status},
			slot.dest()...)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return ClaimedTask{}, "", false, nil
	}
	if err != nil {
		return ClaimedTask{}, "", false, fmt.Errorf("lock activity task: %w", err)
	}
	if err := json.Unmarshal(opts, &t.Options); err != nil {
		return ClaimedTask{}, "", false, fmt.Errorf("activity task options: %w", err)
	}
	t.Slot = slot.slot()
	return t, status, true, nil
}

// HeartbeatAsync records a heartbeat of task taskID's running attempt
// with details (nil: JSON null) and, for an async attempt, pushes its
// lock back by the heartbeat timeout of heartbeat microseconds (0: none),
// never past its deadline; it returns whether the workflow cancelled the
// activity.
func HeartbeatAsync(ctx context.Context, q Querier, taskID int64, details any, heartbeat int64) (bool, error) {
	var canceled bool
	err := q.QueryRow(ctx, `
			UPDATE harvest_tasks SET heartbeat_at = now(), heartbeat_details = $2,
			       locked_until = CASE WHEN async AND $3 > 0 THEN LEAST(async_deadline, now() + $3 * interval '1 microsecond')
			                           ELSE locked_until END
			 WHERE task_id = $1 RETURNING cancel_requested`, taskID, details, heartbeat).Scan(&canceled)
	return canceled, err
}

// ExpiredAsyncTasks reads up to 64 async attempts whose lock expired,
// oldest lock first, and passes each to fn with the timeout it met:
// scheduleToClose past its schedule-to-close deadline (in workflow time,
// ahead microseconds ahead of the database's clock), startToClose past
// its async deadline, else heartbeat.
func ExpiredAsyncTasks(ctx context.Context, q Querier, ahead int64, scheduleToClose, startToClose, heartbeat string,
	fn func(t ClaimedTask, timeout string)) error {
	rows, err := q.Query(ctx, `
			SELECT t.task_id, t.execution_id, e.workflow_name, e.workflow_id, t.activity_id, t.activity_name,
			       t.idempotency_key, t.options, t.attempt, t.close_deadline,
			       CASE WHEN t.close_deadline IS NOT NULL AND t.close_deadline <= now() + $1 * interval '1 microsecond' THEN $2
			            WHEN t.async_deadline <= now() THEN $3 ELSE $4 END
			  FROM harvest_tasks t JOIN harvest_executions e ON e.execution_id = t.execution_id
			 WHERE t.status = 'running' AND t.async AND t.locked_until < now()
			 ORDER BY t.locked_until LIMIT 64`,
		ahead, scheduleToClose, startToClose, heartbeat)
	if err != nil {
		return fmt.Errorf("sweep async attempts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var t ClaimedTask
		var opts []byte
		var typ string
		if err := rows.Scan(&t.TaskID, &t.ExecutionID, &t.WorkflowName, &t.WorkflowID, &t.ActivityID, &t.Name,
			&t.Key, &opts, &t.Attempt, &t.CloseDeadline, &typ); err != nil {
			return fmt.Errorf("sweep async attempts: %w", err)
		}
		if err := json.Unmarshal(opts, &t.Options); err != nil {
			return fmt.Errorf("activity task options: %w", err)
		}
		fn(t, typ)
	}
	return rows.Err()
}

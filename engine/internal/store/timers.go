package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// DueTimer is a timer whose time has come.
type DueTimer struct {
	ExecutionID uuid.UUID
	TimerID     string
}

// DueTimers are up to limit timers due by workflow time (now() + ahead
// microseconds), earliest first.
func DueTimers(ctx context.Context, q Querier, limit int, ahead int64) ([]DueTimer, error) {
	rows, err := q.Query(ctx, `
		SELECT execution_id, timer_id FROM harvest_timers
		 WHERE fire_at <= now() + $2 * interval '1 microsecond' ORDER BY fire_at LIMIT $1`, limit, ahead)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[DueTimer])
}

// DeleteTimer deletes a run's timer and returns the time it was due;
// pgx.ErrNoRows when it is gone already.
func DeleteTimer(ctx context.Context, q Querier, id uuid.UUID, timerID string) (time.Time, error) {
	var fireAt time.Time
	err := q.QueryRow(ctx, `DELETE FROM harvest_timers WHERE execution_id = $1 AND timer_id = $2 RETURNING fire_at`,
		id, timerID).Scan(&fireAt)
	return fireAt, err
}

// NextTimerIn is how long, in seconds of workflow time (now() + ahead
// microseconds), until the earliest timer is due; nil when there is none.
func NextTimerIn(ctx context.Context, q Querier, ahead int64) (*float64, error) {
	var in *float64
	err := q.QueryRow(ctx, `
		SELECT extract(epoch FROM min(fire_at) - now() - $1 * interval '1 microsecond') FROM harvest_timers`,
		ahead).Scan(&in)
	return in, err
}

// QueueTimerAt queues a run's timer due at at.
func QueueTimerAt(b *pgx.Batch, id uuid.UUID, timerID string, at time.Time) {
	b.Queue(`INSERT INTO harvest_timers (execution_id, timer_id, fire_at) VALUES ($1, $2, $3)`,
		id, timerID, at)
}

// QueueTimerIn queues a run's timer due in microseconds of the
// transaction's now().
func QueueTimerIn(b *pgx.Batch, id uuid.UUID, timerID string, in int64) {
	b.Queue(`
			INSERT INTO harvest_timers (execution_id, timer_id, fire_at)
			VALUES ($1, $2, now() + $3 * interval '1 microsecond')`, id, timerID, in)
}

// QueueCancelTimers queues the delete of the timers timerIDs[i] of runs
// execs[i].
func QueueCancelTimers(b *pgx.Batch, execs []uuid.UUID, timerIDs []string) {
	b.Queue(`
			DELETE FROM harvest_timers t
			 USING unnest($1::uuid[], $2::text[]) AS u(id, timer_id)
			 WHERE t.execution_id = u.id AND t.timer_id = u.timer_id`, execs, timerIDs)
}

// QueueInsertTimers queues the timers timerIDs[i] of runs ids[i], due at
// fireAt[i].
func QueueInsertTimers(b *pgx.Batch, ids []uuid.UUID, timerIDs []string, fireAt []time.Time) {
	b.Queue(`
			INSERT INTO harvest_timers (execution_id, timer_id, fire_at)
			SELECT * FROM unnest($1::uuid[], $2::text[], $3::timestamptz[])`,
		ids, timerIDs, fireAt)
}

// QueueHandOverTimers queues copies of the timeout timers (execTimer,
// runTimer) of runs olds[i] for their successors news[i]: the execution
// timeout keeps its deadline; the run timeout starts over (at workflow
// time: now plus ahead microseconds), as long as it was.
func QueueHandOverTimers(b *pgx.Batch, olds, news []uuid.UUID, execTimer, runTimer string, ahead int64) {
	b.Queue(`
		INSERT INTO harvest_timers (execution_id, timer_id, fire_at)
		SELECT u.new, t.timer_id,
		       CASE WHEN t.timer_id = $3 THEN t.fire_at
		            ELSE now() + $5 * interval '1 microsecond' + (t.fire_at - s.created_at) END
		  FROM unnest($1::uuid[], $2::uuid[]) AS u(old, new)
		  JOIN harvest_timers t ON t.execution_id = u.old AND t.timer_id IN ($3, $4)
		  JOIN harvest_events s ON s.execution_id = u.old AND s.event_id = 0`,
		olds, news, execTimer, runTimer, ahead)
}

// QueueDeleteRunsTimers queues the delete of the timers of runs ids.
func QueueDeleteRunsTimers(b *pgx.Batch, ids []uuid.UUID) {
	b.Queue(`DELETE FROM harvest_timers WHERE execution_id = ANY($1)`, ids)
}

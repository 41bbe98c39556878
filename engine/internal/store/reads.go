package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/shardapi"
)

// The read paths' statements: a run as Describe and List show it, its
// pending work, its outcome and its history pages. They read through
// the pool, unfenced.

// executionColumns are the columns of a run as the reads show it, in
// scanExecution's order.
const executionColumns = `execution_id, workflow_name, workflow_id, state, queue, input, output, error, memo,
	coalesce(idempotency_key, ''), coalesce(last_error, ''), wf_task_attempt, next_event_id, created_at, updated_at, completed_at,
	(SELECT fire_at FROM harvest_timers t WHERE t.execution_id = harvest_executions.execution_id AND t.timer_id = '$timeout:execution'),
	(SELECT fire_at FROM harvest_timers t WHERE t.execution_id = harvest_executions.execution_id AND t.timer_id = '$timeout:run'),
	coalesce(chain_id, execution_id), continued_from, continued_to`

func scanExecution(row pgx.Row) (shardapi.Execution, error) {
	var x shardapi.Execution
	err := row.Scan(&x.ExecutionID, &x.WorkflowName, &x.WorkflowID, &x.State, &x.Queue, &x.Input, &x.Output, &x.Error,
		&x.Memo, &x.IdempotencyKey, &x.LastError, &x.TaskAttempt, &x.EventCount, &x.CreatedAt, &x.UpdatedAt, &x.CompletedAt,
		&x.ExecutionDeadline, &x.RunDeadline, &x.ChainID, &x.ContinuedFrom, &x.ContinuedTo)
	return x, err
}

// GetExecution reads run id; pgx.ErrNoRows when there is none.
func GetExecution(ctx context.Context, q Querier, id uuid.UUID) (shardapi.Execution, error) {
	return scanExecution(q.QueryRow(ctx, `SELECT `+executionColumns+` FROM harvest_executions WHERE execution_id = $1`, id))
}

// ListFilter selects and orders the runs of a page of ListExecutions.
type ListFilter struct {
	States                   []string // empty: every state
	WorkflowName, WorkflowID string   // "": any
	WorkflowIDPrefix         string   // "": any
	// CursorTime and CursorID are the (created_at, execution_id) key the
	// page continues after (nil: from the start).
	CursorTime *time.Time
	CursorID   *uuid.UUID
	// After and Before bound created_at to [After, Before) (nil:
	// unbounded).
	After, Before *time.Time
	Ascending     bool // oldest first; else newest first
	Limit         int
}

// ListExecutions reads the runs of f, in (created_at, execution_id)
// order, up to f.Limit.
func ListExecutions(ctx context.Context, q Querier, f ListFilter) ([]shardapi.Execution, error) {
	cmpOp, order := "<", "DESC"
	if f.Ascending {
		cmpOp, order = ">", "ASC"
	}
	// The simple protocol plans the query for these arguments: which
	// filters are set decides which index serves it (see internal/pgpool).
	rows, err := q.Query(ctx, `
		SELECT `+executionColumns+` FROM harvest_executions
		 WHERE (coalesce(cardinality($1::text[]), 0) = 0 OR state = ANY($1))
		   AND ($2 = '' OR workflow_name = $2)
		   AND ($3 = '' OR workflow_id = $3)
		   AND ($4::timestamptz IS NULL OR (created_at, execution_id) `+cmpOp+` ($4, $5::uuid))
		   AND ($7::timestamptz IS NULL OR created_at >= $7)
		   AND ($8::timestamptz IS NULL OR created_at < $8)
		   AND ($9 = '' OR starts_with(workflow_id, $9))
		 ORDER BY created_at `+order+`, execution_id `+order+`
		 LIMIT $6`, pgx.QueryExecModeSimpleProtocol, f.States, f.WorkflowName, f.WorkflowID, f.CursorTime, f.CursorID,
		f.Limit, f.After, f.Before, f.WorkflowIDPrefix)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (shardapi.Execution, error) { return scanExecution(row) })
}

// CancelRequestedAt is the time of run id's WorkflowCancelRequested
// event; nil when it has none.
func CancelRequestedAt(ctx context.Context, q Querier, id uuid.UUID) (*time.Time, error) {
	var at *time.Time
	err := q.QueryRow(ctx, `
		SELECT min(created_at) FROM harvest_events
		 WHERE execution_id = $1 AND event_type = 'WorkflowCancelRequested'`, id).Scan(&at)
	return at, err
}

// PendingActivities are the activity tasks of run id, in task order.
func PendingActivities(ctx context.Context, q Querier, id uuid.UUID) ([]shardapi.PendingActivity, error) {
	rows, err := q.Query(ctx, `
		SELECT activity_id, activity_name, status, attempt, idempotency_key, scheduled_at, last_failed_at, last_error,
		       heartbeat_details
		  FROM harvest_tasks WHERE execution_id = $1 ORDER BY task_id`, id)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[shardapi.PendingActivity])
}

// PendingTimers are the timers of run id, earliest first.
func PendingTimers(ctx context.Context, q Querier, id uuid.UUID) ([]shardapi.PendingTimer, error) {
	rows, err := q.Query(ctx, `SELECT timer_id, fire_at FROM harvest_timers WHERE execution_id = $1 ORDER BY fire_at`, id)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[shardapi.PendingTimer])
}

// Outcome reads run id's outcome; pgx.ErrNoRows when there is no such
// run.
func Outcome(ctx context.Context, q Querier, id uuid.UUID) (shardapi.Outcome, error) {
	o := shardapi.Outcome{ExecutionID: id}
	err := q.QueryRow(ctx, `
		SELECT state, output, error, completed_at, coalesce(last_error, ''), continued_to
		  FROM harvest_executions WHERE execution_id = $1`, id).
		Scan(&o.State, &o.Output, &o.Error, &o.CompletedAt, &o.LastError, &o.ContinuedTo)
	return o, err
}

// historyPageSQL walks a run's events after $2 (of the types $3, if any)
// in event_id order, one index probe a step, adding up their data's JSON
// text size: it stops after the event that exceeds the limit $4 or the
// byte bound $5 (but never after the first event alone), so the database
// reads at most one event beyond the page, and sends that one without
// its data (it is only there to say more follow). An event that cannot
// fit, because the page is already full in events or bytes, is not
// measured (its size would be a second conversion of its data to text:
// with pages of one large event each, a third of the work); any size of
// JSON text is at least one byte, so total+1 excludes it just as well.
const historyPageSQL = `
	WITH RECURSIVE page AS (
		(SELECT e.event_id, e.event_type, e.data, e.created_at, octet_length(e.data::text)::bigint AS total, 1 AS n
		   FROM harvest_events e
		  WHERE e.execution_id = $1 AND e.event_id > $2 AND (coalesce(cardinality($3::text[]), 0) = 0 OR e.event_type = ANY($3))
		  ORDER BY e.event_id LIMIT 1)
		UNION ALL
		SELECT e.event_id, e.event_type, e.data, e.created_at,
		       CASE WHEN p.n < $4::int AND p.total < $5::bigint THEN p.total + octet_length(e.data::text) ELSE p.total + 1 END, p.n + 1
		  FROM page p, LATERAL (
			SELECT * FROM harvest_events e
			 WHERE e.execution_id = $1 AND e.event_id > p.event_id AND (coalesce(cardinality($3::text[]), 0) = 0 OR e.event_type = ANY($3))
			 ORDER BY e.event_id LIMIT 1) e
		 WHERE p.n <= $4::int AND (p.total <= $5::bigint OR p.n = 1)
	)
	SELECT event_id, event_type, CASE WHEN n <= $4::int AND (n = 1 OR total <= $5::bigint) THEN data END, created_at, total
	  FROM page ORDER BY event_id`

// HistoryPage reads the events of run id after event after (of types, if
// any) for a page of at most limit events and maxBytes of their data
// (see historyPageSQL), with each one's running data size in totals: the
// last event read may lie beyond the page, to say more follow.
func HistoryPage(ctx context.Context, q Querier, id uuid.UUID, after int64, types []string, limit int, maxBytes int64) (events []harvest.Event, totals []int64, err error) {
	rows, err := q.Query(ctx, historyPageSQL, id, after, types, limit, maxBytes)
	if err != nil {
		return nil, nil, err
	}
	events, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (harvest.Event, error) {
		var ev harvest.Event
		var t string
		var total int64
		err := row.Scan(&ev.EventID, &t, &ev.Data, &ev.Timestamp, &total)
		ev.Type = harvest.EventType(t)
		totals = append(totals, total)
		return ev, err
	})
	if err != nil {
		return nil, nil, err
	}
	return events, totals, nil
}

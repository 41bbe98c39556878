package store

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/jackc/pgx/v5"
)

// CountByState counts runs by state, of workflow name and id when they
// are not empty, created in [after, before) (nil: unbounded), in one
// grouped read (the state_list index holds every column it needs when no
// name or id is given); fn is called for each state with runs.
func CountByState(ctx context.Context, q Querier, name, id, idPrefix string, after, before *time.Time, fn func(state string, n int64)) error {
	rows, err := q.Query(ctx, `
		SELECT state, count(*) FROM harvest_executions
		 WHERE ($1 = '' OR workflow_name = $1)
		   AND ($2 = '' OR workflow_id = $2)
		   AND ($3::timestamptz IS NULL OR created_at >= $3)
		   AND ($4::timestamptz IS NULL OR created_at < $4)
		   AND ($5 = '' OR starts_with(workflow_id, $5))
		 GROUP BY state`, pgx.QueryExecModeSimpleProtocol, name, id, after, before, idPrefix)
	if err != nil {
		return err
	}
	var state string
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&state, &n}, func() error { fn(state, n); return nil })
	return err
}

// ExecRowColumns are the columns a run row is scanned from, after
// execution_id where a query selects it.
const ExecRowColumns = `workflow_name, workflow_id, state, next_event_id, created_at,
		       coalesce(chain_id, execution_id), continued_to`

// ChainLatestJoin joins, to a claim's run e, the current run l of its
// chain when e continued as new (l's columns are NULL otherwise).
const ChainLatestJoin = `
	LEFT JOIN LATERAL (
	      SELECT l.execution_id, l.state FROM harvest_executions l
	       WHERE l.chain_id = coalesce(e.chain_id, e.execution_id) AND l.continued_to IS NULL
	       LIMIT 1) l ON e.continued_to IS NOT NULL`

// lockRunSQL takes run $1's row lock and reads its ExecRowColumns.
const lockRunSQL = `
		SELECT ` + ExecRowColumns + `
		  FROM harvest_executions WHERE execution_id = $1 FOR UPDATE`

// LockRun takes run id's row lock and scans its ExecRowColumns into dst
// (pgx.ErrNoRows when the run does not exist).
func LockRun(ctx context.Context, q Querier, id uuid.UUID, dst ...any) error {
	return q.QueryRow(ctx, lockRunSQL, id).Scan(dst...)
}

// QueueLockRun queues LockRun; the caller scans the row.
func QueueLockRun(b *pgx.Batch, id uuid.UUID) *pgx.QueuedQuery {
	return b.Queue(lockRunSQL, id)
}

// QueueLockRuns queues the row locks of runs ids, taken in the order of
// ids (sorted by the caller, so that two holders never take them
// crosswise); its rows are execution_id then ExecRowColumns.
func QueueLockRuns(b *pgx.Batch, ids []uuid.UUID) *pgx.QueuedQuery {
	return b.Queue(`
		SELECT execution_id, `+ExecRowColumns+`
		  FROM harvest_executions WHERE execution_id = ANY($1) ORDER BY execution_id FOR UPDATE`, ids)
}

// RunUpdates are the columns of one UPDATE of many runs, one entry per
// run: the next event id, whether events were appended, the workflow
// task woken or cleared, the run closed (with state, output and error as
// JSON text) and its slot released, and its successor (uuid.Nil: none).
type RunUpdates struct {
	IDs                                    []uuid.UUID
	Next                                   []int64
	Appended, Wake, Clear, Closes, Release []bool
	States, Outputs, Errs                  []*string
	Cont                                   []uuid.UUID
}

// updateRunsSQL updates the runs of a RunUpdates. Of the columns it sets
// only state (closes) and wf_task_due_at (wakes and clears of a due
// workflow task) and holds_slot (a released slot) are indexed, so the
// appends of eager workflow tasks, on a page with room (fillfactor 80,
// migration 005), are HOT updates (TestWhichExecutionUpdatesAreHOT).
const updateRunsSQL = `
		UPDATE harvest_executions x
		   SET next_event_id   = u.next,
		       updated_at      = CASE WHEN u.appended OR u.closes THEN now() ELSE x.updated_at END,
		       state           = coalesce(u.state, x.state),
		       output          = CASE WHEN u.closes THEN u.output::jsonb ELSE x.output END,
		       error           = CASE WHEN u.closes THEN u.err::jsonb ELSE x.error END,
		       completed_at    = CASE WHEN u.closes THEN now() ELSE x.completed_at END,
		       wf_task_due_at  = CASE WHEN u.clear THEN NULL
		                              WHEN u.wake THEN least(coalesce(x.wf_task_due_at, now()), now())
		                              ELSE x.wf_task_due_at END,
		       wf_task_attempt = CASE WHEN u.clear THEN 0 ELSE x.wf_task_attempt END,
		       last_error      = CASE WHEN u.clear THEN NULL ELSE x.last_error END,
		       holds_slot      = x.holds_slot AND NOT u.release,
		       continued_to    = coalesce(nullif(u.cont, '00000000-0000-0000-0000-000000000000'), x.continued_to)
		  FROM unnest($1::uuid[], $2::bigint[], $3::bool[], $4::bool[], $5::bool[], $6::bool[], $7::bool[],
		              $8::text[], $9::text[], $10::text[], $11::uuid[])
		       AS u(id, next, appended, wake, clear, closes, release, state, output, err, cont)
		 WHERE x.execution_id = u.id`

// returnOutcomesSQL is updateRunsSQL's RETURNING clause when it closes
// runs: their outcomes as stored (jsonb's text, what a read would
// return), so that waiting result polls need no read. Its rows are
// closes, execution_id, state, output, error, completed_at, continued_to.
const returnOutcomesSQL = `
		RETURNING u.closes, x.execution_id, x.state, x.output, x.error, x.completed_at, x.continued_to`

// QueueUpdateRuns queues one UPDATE of the runs of u; returning adds the
// closed runs' outcomes (returnOutcomesSQL) for the caller to scan.
func QueueUpdateRuns(b *pgx.Batch, u *RunUpdates, returning bool) *pgx.QueuedQuery {
	sql := updateRunsSQL
	if returning {
		sql += returnOutcomesSQL
	}
	return b.Queue(sql, u.IDs, u.Next, u.Appended, u.Wake, u.Clear, u.Closes, u.Release, u.States, u.Outputs, u.Errs, u.Cont)
}

// QueueHandOvers queues the inserts of the successors news[i] of the runs
// olds[i] that continue as new, with their inputs (JSON text) and next
// event ids. A successor takes the slot the old run gave up (a running
// run holds it; should another run hold it, the successor does without,
// as the old run did), and its concurrency slot (flow.go): it starts
// RUNNING with the old run's flow key.
func QueueHandOvers(b *pgx.Batch, olds, news []uuid.UUID, inputs []string, next []int64) {
	b.Queue(`
		INSERT INTO harvest_executions (execution_id, workflow_name, workflow_id, state, queue, input, memo,
		                                next_event_id, wf_task_due_at, chain_id, continued_from, holds_slot,
		                                flow_key, priority, fairness_key, flow_turn, flow_since, flow_asked)
		SELECT u.new, x.workflow_name, x.workflow_id, 'RUNNING', x.queue, u.input::jsonb, x.memo,
		       u.next, now(), coalesce(x.chain_id, x.execution_id), x.execution_id,
		       NOT EXISTS (SELECT 1 FROM harvest_executions h
		                    WHERE h.workflow_name = x.workflow_name AND h.workflow_id = x.workflow_id AND h.holds_slot),
		       x.flow_key, x.priority, x.fairness_key, x.flow_turn,
		       CASE WHEN x.flow_key IS NOT NULL THEN clock_timestamp() END, x.flow_asked
		  FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::bigint[]) AS u(old, new, input, next)
		  JOIN harvest_executions x ON x.execution_id = u.old`, olds, news, inputs, next)
}

// CurrentOfChain is the run of chain that has not continued, as of the
// last commit (pgx.ErrNoRows when none is visible).
func CurrentOfChain(ctx context.Context, q Querier, chain uuid.UUID) (uuid.UUID, error) {
	var id uuid.UUID
	err := q.QueryRow(ctx, `
		SELECT execution_id FROM harvest_executions
		 WHERE chain_id = $1 AND continued_to IS NULL LIMIT 1`, chain).Scan(&id)
	return id, err
}

// ClaimWorkflowTasks locks up to limit runs with due workflow tasks, most
// overdue first (due on workflow time: now plus ahead microseconds). Its
// rows are execution_id, ExecRowColumns, wf_task_attempt, the workflow
// time and whether the run is a child; the caller scans them.
func ClaimWorkflowTasks(ctx context.Context, q Querier, limit int, ahead int64) (pgx.Rows, error) {
	return q.Query(ctx, `
		SELECT execution_id, `+ExecRowColumns+`, wf_task_attempt,
		       now() + $2 * interval '1 microsecond', coalesce(idempotency_key LIKE 'hv:child:%', false)
		  FROM harvest_executions
		 WHERE wf_task_due_at <= now() + $2 * interval '1 microsecond'
		 ORDER BY wf_task_due_at
		 LIMIT $1 FOR UPDATE SKIP LOCKED`, limit, ahead)
}

// QueueFailWorkflowTask queues a failed workflow task of run id: its
// attempt and error, retried after delayMS milliseconds.
func QueueFailWorkflowTask(b *pgx.Batch, id uuid.UUID, attempt int, lastErr string, delayMS int64) {
	b.Queue(`
		UPDATE harvest_executions
		   SET wf_task_attempt = $2, last_error = $3, updated_at = now(),
		       wf_task_due_at = now() + $4 * interval '1 millisecond'
		 WHERE execution_id = $1`, id, attempt, lastErr, delayMS)
}

// FlowKeyed reports whether run id carries a flow key (a run of a
// workflow under a concurrency limit, flow.go).
func FlowKeyed(ctx context.Context, q Querier, id uuid.UUID) (bool, error) {
	var keyed bool
	err := q.QueryRow(ctx, `SELECT flow_key IS NOT NULL FROM harvest_executions WHERE execution_id = $1`, id).Scan(&keyed)
	return keyed, err
}

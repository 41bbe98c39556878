package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// The writes of a start: its run in harvest_executions, its
// WorkflowStarted event, its completion callbacks, the release of the
// slot of the run it replaces; the placement checks a placed start
// queues before them; and the checks (harvest_expect, migration 007) of
// the assumptions a start batch sent in one trip makes.

// NewRun is a run a start inserts: its execution id, workflow name and
// id, queue, input and memo (JSON text or nil), idempotency key (nil for
// none), the time its first workflow task is due (nil: now) and, for a
// run of a limited workflow, its flow (nil: under no limit).
type NewRun struct {
	ID               uuid.UUID
	Name, WorkflowID string
	Queue            string
	Input, Memo, Key any
	StartAt          *time.Time
	Flow             *Flow
}

// QueueInsertRun queues the insert of run r, running, its next event 1,
// its first workflow task due at r.StartAt or now; a limited run that
// does not hold its slot (r.Flow.Held) waits QUEUED with no task due.
func QueueInsertRun(b *pgx.Batch, r NewRun) {
	if r.Flow != nil {
		sql, args := insertFlowRun(r, true)
		b.Queue(sql, args...)
		return
	}
	b.Queue(`
		INSERT INTO harvest_executions (execution_id, workflow_name, workflow_id, state, queue, input, memo,
		                                idempotency_key, start_at, next_event_id, wf_task_due_at)
		VALUES ($1, $2, $3, 'RUNNING', $4, $5, $6, $7, $8, 1, greatest(now(), coalesce($8, now())))`,
		r.ID, r.Name, r.WorkflowID, r.Queue, r.Input, r.Memo, r.Key, r.StartAt)
}

// InsertRun inserts run r, running (a limited run that does not hold its
// slot: QUEUED), with no workflow task due, and returns its created_at.
func InsertRun(ctx context.Context, q Querier, r NewRun) (time.Time, error) {
	var at time.Time
	if r.Flow != nil {
		sql, args := insertFlowRun(r, false)
		err := q.QueryRow(ctx, sql, args...).Scan(&at)
		return at, err
	}
	err := q.QueryRow(ctx, `
		INSERT INTO harvest_executions (execution_id, workflow_name, workflow_id, state, queue, input, memo, idempotency_key, start_at)
		VALUES ($1, $2, $3, 'RUNNING', $4, $5, $6, $7, $8)
		RETURNING created_at`, r.ID, r.Name, r.WorkflowID, r.Queue,
		r.Input, r.Memo, r.Key, r.StartAt).Scan(&at)
	return at, err
}

// insertFlowRun is the insert of a limited run r with its flow (one row
// version, as the batch's QueueInsertRunsWithFlows), returning its
// created_at: holding its slot since now, its first task due when taskDue;
// or QUEUED, its turn its step after the last live turn of its workflow,
// key and fairness key.
func insertFlowRun(r NewRun, taskDue bool) (string, []any) {
	f := r.Flow
	return `
		INSERT INTO harvest_executions (execution_id, workflow_name, workflow_id, state, queue, input, memo,
		                                idempotency_key, start_at, next_event_id, wf_task_due_at,
		                                flow_key, priority, fairness_key, flow_turn, flow_since, fairness_weight)
		SELECT $1, $2, $3, CASE WHEN $9::bool THEN 'RUNNING' ELSE 'QUEUED' END, $4, $5, $6, $7, $8, 1,
		       CASE WHEN $9::bool AND $14::bool THEN greatest(now(), coalesce($8::timestamptz, now())) END,
		       $10, $11, $12,
		       CASE WHEN NOT $9::bool THEN ` + nextTurnSQL("$13", "$2", "$10", "$12") + ` END,
		       CASE WHEN $9::bool THEN clock_timestamp() END,
		       CASE WHEN NOT $9::bool THEN nullif($15::smallint, 1) END
		RETURNING created_at`,
		[]any{r.ID, r.Name, r.WorkflowID, r.Queue, r.Input, r.Memo, r.Key, r.StartAt,
			f.Held, f.Key, f.Priority, f.Fairness, f.Step(), taskDue, f.Weight}
}

// nextTurnSQL is the turn of a queued run of workflow name, key and
// fairness key (SQL expressions): rank after the last turn of their live
// runs (the turn index, migration 026), 0 when there are none. Both
// inserts of limited runs (one run, a batch) take their turns from it.
func nextTurnSQL(rank, name, key, fairness string) string {
	return rank + ` + coalesce((
		           SELECT max(y.flow_turn) FROM harvest_executions y
		            WHERE y.workflow_name = ` + name + ` AND y.flow_key = ` + key + ` AND y.fairness_key = ` + fairness + `
		              AND y.flow_turn IS NOT NULL AND y.state IN ('QUEUED', 'RUNNING')), 0)`
}

// QueueStartedEvent queues the insert of run id's first event (event id
// 0) of type eventType with data, stamped with the transaction's time
// aheadMicros ahead.
func QueueStartedEvent(b *pgx.Batch, id uuid.UUID, eventType, data string, aheadMicros int64) {
	b.Queue(`
		INSERT INTO harvest_events (execution_id, event_id, event_type, data, created_at)
		VALUES ($1, 0, $2, $3, now() + $4 * interval '1 microsecond')`,
		id, eventType, data, aheadMicros)
}

// QueueInsertCallback queues the insert of run id's completion callback
// idx: its URL and headers (JSON text).
func QueueInsertCallback(b *pgx.Batch, id uuid.UUID, idx int, url, headers string) {
	b.Queue(`INSERT INTO harvest_callbacks (execution_id, idx, url, headers) VALUES ($1, $2, $3, $4)`, id, idx, url, headers)
}

// QueueInsertCallbacks queues the insert of completion callbacks, one per
// index: the run, the callback's index, its URL and headers (JSON text).
func QueueInsertCallbacks(b *pgx.Batch, ids []uuid.UUID, idx []int32, urls, headers []string) {
	b.Queue(`
			INSERT INTO harvest_callbacks (execution_id, idx, url, headers)
			SELECT id, idx, u, h::jsonb FROM unnest($1::uuid[], $2::int[], $3::text[], $4::text[]) AS r(id, idx, u, h)`,
		ids, idx, urls, headers)
}

// ReleaseSlot makes run id give up its workflow id's slot.
func ReleaseSlot(ctx context.Context, q Querier, id uuid.UUID) error {
	_, err := q.Exec(ctx, `UPDATE harvest_executions SET holds_slot = false WHERE execution_id = $1`, id)
	return err
}

// NewRuns are the runs a start batch inserts, one per index, as their
// first workflow tasks left them: execution id, workflow name and id,
// queue, input, memo and idempotency key (text or nil), the time the
// first task is due (nil: now), whether it ran in the batch (then none is
// due), the next event id, the state, the output and error (JSON text or
// nil) and whether the run holds its workflow id's slot.
type NewRuns struct {
	IDs                 []uuid.UUID
	Names, WorkflowIDs  []string
	Queues              []string
	Inputs, Memos, Keys []*string
	StartAt             []*time.Time
	Ran                 []bool
	Next                []int64
	States              []string
	Outputs, Errors     []*string
	HoldsSlot           []bool
}

// QueueInsertRuns queues the insert of r in one statement; a run that is
// not running is completed now.
func QueueInsertRuns(b *pgx.Batch, r NewRuns) {
	b.Queue(`
		INSERT INTO harvest_executions (execution_id, workflow_name, workflow_id, state, queue, input, memo,
		                                idempotency_key, start_at, next_event_id, wf_task_due_at,
		                                output, error, completed_at, holds_slot)
		SELECT id, n, w, st, q, i::jsonb, m::jsonb, k, s, nx,
		       CASE WHEN ran THEN NULL ELSE greatest(now(), coalesce(s, now())) END,
		       o::jsonb, er::jsonb, CASE WHEN st = 'RUNNING' THEN NULL ELSE now() END, hs
		  FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
		              $8::timestamptz[], $9::bool[], $10::bigint[], $11::text[], $12::text[], $13::text[], $14::bool[])
		       AS r(id, n, w, q, i, m, k, s, ran, nx, st, o, er, hs)`,
		r.IDs, r.Names, r.WorkflowIDs, r.Queues, r.Inputs, r.Memos, r.Keys, r.StartAt,
		r.Ran, r.Next, r.States, r.Outputs, r.Errors, r.HoldsSlot)
}

// RunFlows are the flows of the runs of a NewRuns, one per index (a nil
// key: a run under no limit): its key, priority, fairness key and weight,
// and how far after the last live turn of its workflow, key and fairness
// key its turn is (its step plus those of the runs before it in the
// batch).
type RunFlows struct {
	Keys, Fairness   []*string
	Priority, Weight []*int16
	Rank             []int64
}

// QueueInsertRunsWithFlows is QueueInsertRuns for a batch with runs of
// limited workflows: their flows are inserted with them (not updated
// after: a second version of each row would cost every index of the
// table again). A QUEUED run has no task due; a limited run not QUEUED
// holds its slot since now (flow_since).
func QueueInsertRunsWithFlows(b *pgx.Batch, r NewRuns, f RunFlows) {
	b.Queue(`
		INSERT INTO harvest_executions (execution_id, workflow_name, workflow_id, state, queue, input, memo,
		                                idempotency_key, start_at, next_event_id, wf_task_due_at,
		                                output, error, completed_at, holds_slot,
		                                flow_key, priority, fairness_key, flow_turn, flow_since, fairness_weight)
		SELECT id, n, w, st, q, i::jsonb, m::jsonb, k, s, nx,
		       CASE WHEN ran OR st = 'QUEUED' THEN NULL ELSE greatest(now(), coalesce(s, now())) END,
		       o::jsonb, er::jsonb, CASE WHEN st IN ('RUNNING', 'QUEUED') THEN NULL ELSE now() END, hs,
		       fk, fp, ff,
		       CASE WHEN st = 'QUEUED' THEN `+nextTurnSQL("rank", "r.n", "r.fk", "r.ff")+` END,
		       CASE WHEN fk IS NOT NULL AND st <> 'QUEUED' THEN clock_timestamp() END,
		       CASE WHEN st = 'QUEUED' THEN nullif(fw, 1) END
		  FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
		              $8::timestamptz[], $9::bool[], $10::bigint[], $11::text[], $12::text[], $13::text[], $14::bool[],
		              $15::text[], $16::smallint[], $17::text[], $18::bigint[], $19::smallint[])
		       AS r(id, n, w, q, i, m, k, s, ran, nx, st, o, er, hs, fk, fp, ff, rank, fw)`,
		r.IDs, r.Names, r.WorkflowIDs, r.Queues, r.Inputs, r.Memos, r.Keys, r.StartAt,
		r.Ran, r.Next, r.States, r.Outputs, r.Errors, r.HoldsSlot, f.Keys, f.Priority, f.Fairness, f.Rank, f.Weight)
}

// Placements are the routing keys of placed starts, one per index: the
// workflow name, the routing key, the catalog epoch the start was placed
// under and the start's index in its batch.
type Placements struct {
	Names, Routings []string
	Epochs          []int64
	Idx             []int32
}

// placementLocksSQL takes the placement locks of routing keys: one
// statement, in hash order, so two transactions never take them crosswise.
const placementLocksSQL = `
	SELECT count(pg_advisory_xact_lock($3, h))
	  FROM (SELECT DISTINCT hashtext(n || '/' || rk) AS h
	          FROM unnest($1::text[], $2::text[]) AS u(n, rk) ORDER BY h) s`

// QueuePlacementLocks queues the placement locks (advisory locks of
// class) of the routing keys of p.
func QueuePlacementLocks(b *pgx.Batch, p Placements, class int32) {
	b.Queue(placementLocksSQL, p.Names, p.Routings, class)
}

// movedKeysSQL returns the placed starts (by index) whose routing key a
// newer catalog epoch redirected, with the redirect.
const movedKeysSQL = `
	SELECT r.i, d.epoch, d.target_shard
	  FROM unnest($1::text[], $2::text[], $3::bigint[], $4::int[]) AS r(n, rk, ep, i)
	  JOIN harvest_placement_redirects d ON d.workflow_name = r.n AND d.routing_key = r.rk
	 WHERE d.epoch > r.ep`

// QueueMovedKeys queues the read of the redirects of the routing keys of
// p made by an epoch newer than theirs: fn gets each one's start index,
// the redirect's epoch and its target shard.
func QueueMovedKeys(b *pgx.Batch, p Placements, fn func(i int32, epoch int64, shard int32)) {
	b.Queue(movedKeysSQL, p.Names, p.Routings, p.Epochs, p.Idx).
		Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var (
					i     int32
					epoch int64
					shard int32
				)
				if err := rows.Scan(&i, &epoch, &shard); err != nil {
					return err
				}
				fn(i, epoch, shard)
			}
			return rows.Err()
		})
}

// QueueExpectNoneMoved queues the check (harvest_expect, named expect)
// that no routing key of p was redirected by a newer epoch.
func QueueExpectNoneMoved(b *pgx.Batch, p Placements, expect string) {
	b.Queue(`SELECT harvest_expect(NOT EXISTS (`+movedKeysSQL+`), $5)`,
		p.Names, p.Routings, p.Epochs, p.Idx, expect)
}

// QueueExpectEpoch queues the check (harvest_expect, named expect) that
// the shard lease's epoch is epoch.
func QueueExpectEpoch(b *pgx.Batch, epoch int64, expect string) {
	b.Queue(`SELECT harvest_expect(coalesce((SELECT epoch FROM harvest_shard_lease) = $1, false), $2)`,
		epoch, expect)
}

// QueueExpectTime queues the read of the transaction's now() into now and
// the check (harvest_expect, named expect) that latest is no later than
// now() and earliest at most lagMS milliseconds before it.
func QueueExpectTime(b *pgx.Batch, latest, earliest time.Time, lagMS int64, expect string, now *time.Time) {
	b.Queue(`SELECT now(), harvest_expect($1 <= now() AND $2 >= now() - $3 * interval '1 millisecond', $4)`,
		latest, earliest, lagMS, expect).QueryRow(func(row pgx.Row) error {
		var ok bool
		return row.Scan(now, &ok)
	})
}

// Now reads the database's now().
func Now(ctx context.Context, q Querier) (time.Time, error) {
	var now time.Time
	err := q.QueryRow(ctx, `SELECT now()`).Scan(&now)
	return now, err
}

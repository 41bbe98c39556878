package store

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Flow control (migration 022): a run of a workflow under a concurrency
// limit carries a flow key. It is created QUEUED; the shard's dispatcher
// turns it RUNNING when its key has a free slot. A slot is the RUNNING
// state of a limited run, so whatever closes the run frees it in the same
// transaction, and a continued-as-new successor inherits it.

// Flow is what a queued run carries: its workflow, the key of its limit
// ("" for a limit on the workflow name alone), its dispatch priority (1
// first … 5) and its fairness key ("" for none).
type Flow struct {
	Name, Key string
	Priority  int16
	Fairness  string
}

// QueueMarkQueued queues the statement that makes runs the same batch
// just inserted wait for a slot: QUEUED, no workflow task due, with their
// flows and turns. A run's turn is one more than the last turn of the
// live runs of its fairness key (the runs before it in flows counted), so
// that a key's backlog does not hold back another key's runs. Only starts
// of limited workflows send it, so the insert of every other start stays
// as it is.
func QueueMarkQueued(b *pgx.Batch, ids []uuid.UUID, flows []Flow) {
	keys, prios, fair, rank := make([]string, len(flows)), make([]int16, len(flows)), make([]string, len(flows)), make([]int64, len(flows))
	seen := make(map[Flow]int64, len(flows))
	for i, f := range flows {
		seen[Flow{Name: f.Name, Key: f.Key, Fairness: f.Fairness}]++
		keys[i], prios[i], fair[i] = f.Key, f.Priority, f.Fairness
		rank[i] = seen[Flow{Name: f.Name, Key: f.Key, Fairness: f.Fairness}]
	}
	b.Queue(`
		UPDATE harvest_executions x
		   SET state = 'QUEUED', wf_task_due_at = NULL, completed_at = NULL,
		       flow_key = f.k, priority = f.p, fairness_key = f.fk,
		       flow_turn = f.rank + coalesce((
		           SELECT max(y.flow_turn) FROM harvest_executions y
		            WHERE y.workflow_name = x.workflow_name AND y.flow_key = f.k AND y.fairness_key = f.fk
		              AND y.flow_key IS NOT NULL AND y.state IN ('QUEUED', 'RUNNING')), 0)
		  FROM unnest($1::uuid[], $2::text[], $3::smallint[], $4::text[], $5::bigint[]) AS f(id, k, p, fk, rank)
		 WHERE x.execution_id = f.id`, ids, keys, prios, fair, rank)
}

// Limits are the concurrency limits the dispatcher applies, one per
// index: a workflow name and its most running runs per key.
type Limits struct {
	Names []string
	Max   []int32
}

// promoteSQL gives free slots to queued runs, at most $3 of them. Per
// (workflow name, key) the free slots are the limit less the RUNNING
// runs; the queued runs take them in the order of their priority, then
// of their turns (fairness keys take turns: QueueMarkQueued), then oldest
// first. A queued run whose
// workflow has no limit any more runs at once. A run whose start_at has
// not come waits without a slot. Only the shard owner's dispatcher
// promotes, behind the fence, so the count cannot race another
// promotion; a run closing meanwhile only leaves a slot for the next
// round.
const promoteSQL = `
	WITH lim AS (
	    SELECT * FROM unnest($1::text[], $2::int[]) AS l(name, max)
	), held AS (
	    SELECT workflow_name, flow_key, count(*) AS n
	      FROM harvest_executions
	     WHERE state = 'RUNNING' AND flow_key IS NOT NULL AND workflow_name = ANY($1)
	     GROUP BY workflow_name, flow_key
	), waiting AS (
	    SELECT execution_id, workflow_name, flow_key,
	           row_number() OVER (PARTITION BY workflow_name, flow_key
	                              ORDER BY priority, flow_turn, created_at, execution_id) AS pick
	      FROM harvest_executions
	     WHERE state = 'QUEUED' AND coalesce(start_at, now()) <= now()
	), chosen AS (
	    SELECT w.execution_id
	      FROM waiting w
	      LEFT JOIN lim l ON l.name = w.workflow_name
	      LEFT JOIN held h ON h.workflow_name = w.workflow_name AND h.flow_key = w.flow_key
	     WHERE l.name IS NULL OR w.pick <= l.max - coalesce(h.n, 0)
	     ORDER BY w.pick
	     LIMIT $3
	)
	UPDATE harvest_executions x
	   SET state = 'RUNNING', wf_task_due_at = now(), updated_at = now()
	  FROM chosen c
	 WHERE x.execution_id = c.execution_id AND x.state = 'QUEUED'
	RETURNING x.execution_id`

// PromoteQueued gives the free slots of lim to queued runs, at most max
// of them, and returns the runs it made RUNNING (their first workflow
// task due now).
func PromoteQueued(ctx context.Context, q Querier, lim Limits, max int) ([]uuid.UUID, error) {
	rows, err := q.Query(ctx, promoteSQL, lim.Names, lim.Max, max)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
}

// AnyQueued reports whether some run is QUEUED (the dispatcher's cheap
// look before its transaction).
func AnyQueued(ctx context.Context, q Querier) (bool, error) {
	var found bool
	err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM harvest_executions WHERE state = 'QUEUED')`).Scan(&found)
	return found, err
}

// Occupancy is one key's use of its limit: the runs holding a slot and
// the runs waiting for one.
type Occupancy struct {
	WorkflowName string `json:"workflow_name"`
	Key          string `json:"key"`
	Running      int64  `json:"running"`
	Queued       int64  `json:"queued"`
}

// FlowOccupancy reads, per workflow name and key, the limited runs
// running and queued.
func FlowOccupancy(ctx context.Context, q Querier) ([]Occupancy, error) {
	rows, err := q.Query(ctx, `
		SELECT workflow_name, flow_key, count(*) FILTER (WHERE state = 'RUNNING'), count(*) FILTER (WHERE state = 'QUEUED')
		  FROM harvest_executions
		 WHERE state IN ('RUNNING', 'QUEUED') AND flow_key IS NOT NULL
		 GROUP BY workflow_name, flow_key
		 ORDER BY workflow_name, flow_key`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[Occupancy])
}

package store

import (
	"context"
	"encoding/json"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Flow control (migration 022): a run of a workflow under a concurrency
// limit carries a flow key. It is created QUEUED; the shard's dispatcher
// turns it RUNNING when its key has a free slot. A slot is the RUNNING
// state of a limited run, so whatever closes the run frees it in the same
// transaction, and a continued-as-new successor inherits it.

// Flow is what a limited run carries: its workflow, the key of its limit
// ("" for a limit on the workflow name alone), its dispatch priority (1
// first … 5) and its fairness key ("" for none).
type Flow struct {
	Name, Key string
	Priority  int16
	Fairness  string
	// Weight is the fairness key's weight (1 or more): its runs' turns
	// are TurnScale/Weight apart.
	Weight int16
	// Held: the run takes a free slot in its start (it is inserted
	// RUNNING); otherwise it waits QUEUED.
	Held bool
}

// TurnScale is how far apart the turns of a fairness key of weight 1
// are; a key of weight w has its turns TurnScale/w apart, so it is
// dispatched w times as often.
const TurnScale = 1000

// Step is how far after the last turn of its fairness key a run of f
// takes its turn.
func (f Flow) Step() int64 { return TurnScale / int64(max(f.Weight, 1)) }

// FlowKeys are (workflow name, key) pairs of limited workflows, with each
// one's limit and, for a check, the slots a batch takes of it.
type FlowKeys struct {
	Names, Keys []string
	Max, Take   []int64
}

// Add appends one key.
func (k *FlowKeys) Add(name, key string, max, take int64) {
	k.Names, k.Keys, k.Max, k.Take = append(k.Names, name), append(k.Keys, key), append(k.Max, max), append(k.Take, take)
}

// QueueFlowLocks queues the flow locks (advisory locks of class) of keys,
// in hash order, alone: for a transaction that may make a limited run
// QUEUED without reading its key (a signal-with-start); one that reads
// its keys takes their locks with the read (QueueFlowUse).
func QueueFlowLocks(b *pgx.Batch, keys FlowKeys, class int32) {
	b.Queue(placementLocksSQL, keys.Names, keys.Keys, class)
}

// flowUseSQL takes the keys' flow locks (advisory locks of class $5, in
// hash order) and then reads, per key (by index), its RUNNING limited
// runs counted up to its limit less its take plus one (enough to tell
// whether the take fits), whether some run of the key is QUEUED, its
// limit and its take: harvest_flow_use (migration 026), a VOLATILE
// function whose read, a query after the locks, sees every earlier
// holder's commit. Whatever makes a limited run QUEUED, or takes a slot
// for one in a start, reads its keys so: two such transactions never count
// past the limit together, and a start never takes a slot ahead of a
// queued run.
const flowUseSQL = `SELECT * FROM harvest_flow_use($5, $1::text[], $2::text[], $3::bigint[], $4::bigint[])`

// QueueFlowUse queues the flow locks of keys (advisory locks of class)
// and the read of each key's use (see flowUseSQL): fn gets its index, its
// running runs (counted up to its limit plus one) and whether some run
// waits.
func QueueFlowUse(b *pgx.Batch, keys FlowKeys, class int32, fn func(i int, running int64, queued bool)) {
	b.Queue(flowUseSQL, keys.Names, keys.Keys, keys.Max, zeros(len(keys.Names)), class).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var (
				i, running, max, take int64
				queued                bool
			)
			if err := rows.Scan(&i, &running, &queued, &max, &take); err != nil {
				return err
			}
			fn(int(i), running, queued)
		}
		return rows.Err()
	})
}

// QueueExpectFlowFree queues the flow locks of keys (advisory locks of
// class) and the check (harvest_expect, named expect) that each key with
// a take has no QUEUED run and room for its take (a key of take 0 is only
// locked).
func QueueExpectFlowFree(b *pgx.Batch, keys FlowKeys, class int32, expect string) {
	b.Queue(`SELECT harvest_expect(coalesce(bool_and(s.take = 0 OR (NOT s.queued AND s.running + s.take <= s.max)), true), $6) FROM (`+flowUseSQL+`) s`,
		keys.Names, keys.Keys, keys.Max, keys.Take, class, expect)
}

func zeros(n int) []int64 { return make([]int64, n) }

// Limits are the concurrency limits the dispatcher applies, one per
// index: a workflow name and its most running runs per key.
type Limits struct {
	Names []string
	Max   []int32
	// Cluster and ClusterMax are the workflows whose limits are counted
	// across the cluster, by their keys' keepers (flow_keeper.go): the
	// dispatcher asks, and never promotes, their queued runs.
	Cluster    []string
	ClusterMax []int32
	// ClusterPaths are their key pointers' paths, as Paths.
	ClusterPaths []string
	// Paths are the JSON arrays of the limits' key pointers' reference
	// tokens (empty: a limit on the name alone).
	Paths []string
}

// PointerPath is the JSON array of a JSON pointer's reference tokens, as
// the statements take it (the path of #>>).
func PointerPath(tokens []string) string {
	raw, _ := json.Marshal(append([]string{}, tokens...)) // strings always encode
	return string(raw)
}

// AdoptRunning counts, from now on, the RUNNING runs of lim's workflows
// that hold no slot: runs started before their workflow was limited (a
// limit set at run time, a new build). Each takes the slot of its key as
// the input gives it ("" when the value is missing), so that new starts
// wait until the key is below its limit again; it returns how many.
func AdoptRunning(ctx context.Context, q Querier, lim Limits) (int64, error) {
	tag, err := q.Exec(ctx, `
		UPDATE harvest_executions x
		   SET flow_key = CASE WHEN cardinality(l.path) = 0 THEN '' ELSE coalesce(x.input #>> l.path, '') END,
		       priority = 3, fairness_key = '', flow_since = clock_timestamp()
		  FROM (SELECT u.n, ARRAY(SELECT jsonb_array_elements_text(u.p::jsonb)) AS path
		          FROM unnest($1::text[], $2::text[]) AS u(n, p)) l
		 WHERE x.workflow_name = l.n AND x.state = 'RUNNING' AND x.flow_key IS NULL`, lim.Names, lim.Paths)
	return tag.RowsAffected(), err
}

// promoteSQL gives free slots to queued runs, at most $3 of them. Per
// (workflow name, key) the free slots are the limit less the RUNNING
// runs; the queued runs take them in the order of their priority, then
// of their turns (fairness keys take turns: QueueMarkQueued), then oldest
// first. A queued run whose
// workflow has no limit any more runs at once; one whose slot is its
// key's keeper's (flow_asked), or of a workflow limited across the
// cluster ($4), is never promoted here: its keeper grants it
// (flow_keeper.go). A run whose start_at has
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
	       AND NOT flow_asked AND workflow_name <> ALL($4)
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
	   SET state = 'RUNNING', wf_task_due_at = now(), updated_at = now(), flow_since = clock_timestamp()
	  FROM chosen c
	 WHERE x.execution_id = c.execution_id AND x.state = 'QUEUED'
	RETURNING x.execution_id, x.workflow_name`

// Promoted is a queued run the dispatcher made RUNNING.
type Promoted struct {
	ID           uuid.UUID
	WorkflowName string
}

// PromoteQueued gives the free slots of lim to queued runs, at most max
// of them, and returns the runs it made RUNNING (their first workflow
// task due now).
func PromoteQueued(ctx context.Context, q Querier, lim Limits, max int) ([]Promoted, error) {
	rows, err := q.Query(ctx, promoteSQL, lim.Names, lim.Max, max, nonNil(lim.Cluster))
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[Promoted])
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
// running and queued (each state from its own partial index).
func FlowOccupancy(ctx context.Context, q Querier) ([]Occupancy, error) {
	rows, err := q.Query(ctx, `
		SELECT workflow_name, flow_key, sum(r)::bigint, sum(q)::bigint
		  FROM (SELECT workflow_name, flow_key, count(*) AS r, 0 AS q FROM harvest_executions
		         WHERE state = 'RUNNING' AND flow_key IS NOT NULL
		         GROUP BY workflow_name, flow_key
		        UNION ALL
		        SELECT workflow_name, flow_key, 0, count(*) FROM harvest_executions
		         WHERE state = 'QUEUED' AND flow_key IS NOT NULL
		         GROUP BY workflow_name, flow_key) u
		 GROUP BY workflow_name, flow_key
		 ORDER BY workflow_name, flow_key`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[Occupancy])
}

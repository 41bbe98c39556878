package store

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Concurrency limits counted across the cluster (migration 027,
// internal/flowkeeper): a queued run of such a workflow asks its key's
// keeper for a slot, the keeper's grant signal makes it RUNNING, and the
// chain's close gives the slot back. Each step's intent is an outbox row
// written in the transaction of the change that causes it, performed as
// a keyed signal.

// Outbox kinds and keys of the keepers' signals.
const (
	// FlowAcquireKind: a queued run asks its keeper for a slot, keyed
	// FlowAcquireKeyPrefix + chain id.
	FlowAcquireKind      = "flow_acquire"
	FlowAcquireKeyPrefix = "hv:flowacq:"
	// FlowReleaseKind: a closed chain gives its slot back, keyed
	// FlowReleaseKeyPrefix + chain id.
	FlowReleaseKind      = "flow_release"
	FlowReleaseKeyPrefix = "hv:flowrel:"
)

// askKeepersSQL marks up to $3 queued runs of the workflows $1 (limits
// $2) as their keepers' (flow_asked), and inserts the outbox row of each
// one's acquire (with its fairness weight, migration 028), in one
// statement. A delayed run asks once it is due.
const askKeepersSQL = `
	WITH lim AS (
	    SELECT * FROM unnest($1::text[], $2::int[]) AS l(name, max)
	), asked AS (
	    UPDATE harvest_executions x SET flow_asked = true, updated_at = now()
	      FROM (SELECT execution_id FROM harvest_executions
	             WHERE state = 'QUEUED' AND NOT flow_asked AND workflow_name = ANY($1)
	               AND coalesce(start_at, now()) <= now()
	             ORDER BY created_at LIMIT $3) c
	     WHERE x.execution_id = c.execution_id AND x.state = 'QUEUED' AND NOT x.flow_asked
	    RETURNING x.execution_id, coalesce(x.chain_id, x.execution_id)::text AS chain, x.workflow_name,
	              coalesce(x.flow_key, '') AS flow_key, coalesce(x.priority, 3) AS priority, coalesce(x.fairness_key, '') AS fairness,
	              coalesce(x.fairness_weight, 1) AS weight
	)
	INSERT INTO harvest_outbox (execution_id, command_id, kind, request)
	SELECT a.execution_id, '` + FlowAcquireKeyPrefix + `' || a.chain, '` + FlowAcquireKind + `',
	       jsonb_build_object('workflow', a.workflow_name, 'key', a.flow_key,
	                          'acquire', jsonb_build_object('chain', a.chain, 'execution', a.execution_id::text,
	                                                        'priority', a.priority, 'fairness', a.fairness, 'weight', a.weight,
	                                                        'max', l.max))
	  FROM asked a JOIN lim l ON l.name = a.workflow_name
	ON CONFLICT DO NOTHING`

// AskKeepers makes up to max queued runs of lim's workflows limited
// across the cluster ask their keepers for slots (askKeepersSQL); it
// returns how many asked.
func AskKeepers(ctx context.Context, q Querier, lim Limits, max int) (int64, error) {
	tag, err := q.Exec(ctx, askKeepersSQL, lim.Cluster, lim.ClusterMax, max)
	return tag.RowsAffected(), err
}

// adoptKeepersSQL makes the keepers count the RUNNING runs of the
// workflows $1 (limits $2, key paths $3) that no keeper counts (runs
// started before their limit was counted across the cluster): each is
// marked as its keeper's, with the key its input gives ("" when the value
// is missing; a key it holds already stays), and its acquire says it
// holds a slot already (held), which the keeper counts whatever the
// limit, as a lowered limit lets the runs over it finish.
const adoptKeepersSQL = `
	WITH lim AS (
	    SELECT u.n AS name, u.m AS max, ARRAY(SELECT jsonb_array_elements_text(u.p::jsonb)) AS path
	      FROM unnest($1::text[], $2::int[], $3::text[]) AS u(n, m, p)
	), adopted AS (
	    UPDATE harvest_executions x
	       SET flow_asked = true,
	           flow_key = coalesce(x.flow_key, CASE WHEN cardinality(l.path) = 0 THEN '' ELSE coalesce(x.input #>> l.path, '') END),
	           priority = coalesce(x.priority, 3), fairness_key = coalesce(x.fairness_key, ''),
	           flow_since = coalesce(x.flow_since, clock_timestamp())
	      FROM lim l
	     WHERE x.workflow_name = l.name AND x.state = 'RUNNING' AND NOT x.flow_asked
	    RETURNING x.execution_id, coalesce(x.chain_id, x.execution_id)::text AS chain, x.workflow_name, x.flow_key,
	              x.priority, x.fairness_key AS fairness, l.max
	)
	INSERT INTO harvest_outbox (execution_id, command_id, kind, request)
	SELECT a.execution_id, '` + FlowAcquireKeyPrefix + `' || a.chain, '` + FlowAcquireKind + `',
	       jsonb_build_object('workflow', a.workflow_name, 'key', a.flow_key,
	                          'acquire', jsonb_build_object('chain', a.chain, 'execution', a.execution_id::text,
	                                                        'priority', a.priority, 'fairness', a.fairness, 'max', a.max,
	                                                        'held', true))
	  FROM adopted a
	ON CONFLICT DO NOTHING`

// AdoptKeepers makes the keepers of lim's workflows limited across the
// cluster count their RUNNING runs no keeper counts (adoptKeepersSQL); it
// returns how many it adopted.
func AdoptKeepers(ctx context.Context, q Querier, lim Limits) (int64, error) {
	tag, err := q.Exec(ctx, adoptKeepersSQL, lim.Cluster, lim.ClusterMax, lim.ClusterPaths)
	return tag.RowsAffected(), err
}

// QueueGrantSlots queues, for the keepers' grants to the runs ids, the
// promotion of those still QUEUED whose keeper holds their slots: RUNNING,
// their first workflow task due now.
func QueueGrantSlots(b *pgx.Batch, ids []uuid.UUID) {
	b.Queue(`
		UPDATE harvest_executions
		   SET state = 'RUNNING', wf_task_due_at = now(), updated_at = now(), flow_since = clock_timestamp()
		 WHERE execution_id = ANY($1) AND state = 'QUEUED' AND flow_asked`, ids)
}

// nonNil is s, or an empty slice for nil (which pgx sends as NULL).
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

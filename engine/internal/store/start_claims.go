package store

// The start claims, harvest_start_idempotency: one row per keyed start
// (workflow name, idempotency key) while its idempotency window lasts.

// LookupClaimsSQL finds the live claims of many keys: for the i-th
// (name, key) of $1 and $2 with a claim younger than $3 milliseconds, a
// row (i, execution id, workflow id, state, seconds the claim has left,
// and the chain's current run and its state when the run continued as
// new). One index lookup per key,
// whatever the table's size: the LIMIT keeps the planner from turning the
// lateral lookups into a hash join over the whole claims table (a generic
// plan assumes ten keys).
const LookupClaimsSQL = `
	SELECT r.i, c.execution_id, c.workflow_id, c.state, c.left_s, c.latest_id, c.latest_state
	  FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS r(n, k, i)
	 CROSS JOIN LATERAL (
	       SELECT c.execution_id, e.workflow_id, e.state,
	              extract(epoch FROM c.created_at - now() + $3 * interval '1 millisecond')::float8 AS left_s,
	              l.execution_id AS latest_id, l.state AS latest_state
	         FROM harvest_start_idempotency c
	         LEFT JOIN harvest_executions e ON e.execution_id = c.execution_id` + ChainLatestJoin + `
	        WHERE c.workflow_name = r.n AND c.idempotency_key = r.k
	          AND c.created_at >= now() - $3 * interval '1 millisecond'
	        LIMIT 1) c`

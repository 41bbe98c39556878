package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// OutboxRow is one claimed outbox row.
type OutboxRow struct {
	ID          int64
	ExecutionID uuid.UUID
	CommandID   string
	Kind        string
	Request     json.RawMessage
	Attempts    int
}

// OutboxRows are the outbox rows a transaction inserts, by column.
type OutboxRows struct {
	commandIDs, kinds, requests []string
	execs                       []uuid.UUID
}

// Add adds a row of run ex (uuid.Nil: of no run) for command commandID,
// of kind, with request as its JSON.
func (o *OutboxRows) Add(ex uuid.UUID, commandID, kind string, request any) error {
	raw, err := json.Marshal(request)
	if err != nil {
		return fmt.Errorf("encode outbox request: %w", err)
	}
	o.execs = append(o.execs, ex)
	o.commandIDs, o.kinds, o.requests = append(o.commandIDs, commandID), append(o.kinds, kind), append(o.requests, string(raw))
	return nil
}

// Len is the number of rows.
func (o *OutboxRows) Len() int { return len(o.execs) }

// Queue queues the rows' insert (none when there are none); a command
// recorded before keeps its row.
func (o *OutboxRows) Queue(b *pgx.Batch) {
	if len(o.execs) == 0 {
		return
	}
	b.Queue(`
		INSERT INTO harvest_outbox (execution_id, command_id, kind, request)
		SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::jsonb[])
		ON CONFLICT DO NOTHING`, o.execs, o.commandIDs, o.kinds, o.requests)
}

// outboxDue is the read-only look before a claim: most polls of a shard
// find nothing, and then cost one indexed read, not a fenced transaction.
const outboxDue = `
	SELECT EXISTS (SELECT 1 FROM harvest_outbox WHERE due_at <= now())
	    OR EXISTS (SELECT 1 FROM harvest_outbox WHERE claim_epoch < $1 AND attempts > 0)`

// OutboxDue reports whether a row is due, or was claimed under an epoch
// before epoch and not answered.
func OutboxDue(ctx context.Context, q Querier, epoch int64) (bool, error) {
	var due bool
	err := q.QueryRow(ctx, outboxDue, epoch).Scan(&due)
	return due, err
}

// ClaimOutbox claims up to limit due rows for one attempt each under
// epoch: their attempt is counted and their next attempt put lease ahead.
func ClaimOutbox(ctx context.Context, q Querier, limit int, lease time.Duration, epoch int64) ([]OutboxRow, error) {
	rows, err := q.Query(ctx, `
			WITH c AS (SELECT outbox_id FROM harvest_outbox
			            WHERE due_at <= now() OR (claim_epoch < $3 AND attempts > 0)
			            ORDER BY due_at LIMIT $1 FOR UPDATE SKIP LOCKED)
			UPDATE harvest_outbox o SET attempts = o.attempts + 1, due_at = now() + $2 * interval '1 millisecond',
			       claim_epoch = $3
			  FROM c WHERE o.outbox_id = c.outbox_id
			RETURNING o.outbox_id, o.execution_id, o.command_id, o.kind, o.request, o.attempts`,
		limit, lease.Milliseconds(), epoch)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[OutboxRow])
}

// RetryOutbox puts a row's next attempt delay ahead, with cause as its
// last error.
func RetryOutbox(ctx context.Context, q Querier, id int64, delay time.Duration, cause string) error {
	_, err := q.Exec(ctx, `
			UPDATE harvest_outbox SET due_at = now() + $2 * interval '1 millisecond', last_error = $3
			 WHERE outbox_id = $1`, id, delay.Milliseconds(), cause)
	return err
}

// QueueDeleteOutbox queues the delete of rows ids; deleted is called for
// each row deleted (another attempt may have deleted some already).
func QueueDeleteOutbox(b *pgx.Batch, ids []int64, deleted func(id int64)) {
	b.Queue(`DELETE FROM harvest_outbox WHERE outbox_id = ANY($1) RETURNING outbox_id`, ids).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				return err
			}
			deleted(id)
		}
		return rows.Err()
	})
}

// recordResolvedSQL keeps the first recorded resolution: attempts that
// raced both signal the run that was recorded first.
const recordResolvedSQL = `
	UPDATE harvest_outbox
	   SET request = CASE WHEN request ? 'resolved_execution_id' THEN request
	                      ELSE request || jsonb_build_object('resolved_execution_id', $2::text) END
	 WHERE outbox_id = $1
	RETURNING request->>'resolved_execution_id'`

// RecordResolved records id as the run an outbox row's workflow id
// resolved to, unless an earlier attempt recorded one, and returns the
// one recorded; pgx.ErrNoRows when the row is gone.
func RecordResolved(ctx context.Context, q Querier, rowID int64, id uuid.UUID) (string, error) {
	var got string
	err := q.QueryRow(ctx, recordResolvedSQL, rowID, id.String()).Scan(&got)
	return got, err
}

// The outbox rows a close causes, and the children rows the child
// kinds (start_child, close_child) keep.

// closeOutbox inserts, with the close of the runs $1, the outbox rows
// their closes cause: a closing child's report to its parent (a run
// started under a harvest.ChildStartKey remembers its parent in its
// idempotency key), and the close policy of each child of a closing
// parent (closePolicyOutbox). A run that continues as new reports
// nothing: its chain goes on, and the chain's last run reports for it
// (the chain's first run holds the key), under the chain's id. Nor does
// a run a reset replaced (TERMINATED, with continued_to): its chain goes
// on too, and its children with it (no close policy).
const closeOutbox = `
	INSERT INTO harvest_outbox (execution_id, command_id, kind, request)
	SELECT x.execution_id, '', 'child_done',
	       jsonb_build_object('parent', split_part(k.key, ':', 3), 'command_id', split_part(k.key, ':', 4),
	                          'chain', coalesce(x.chain_id, x.execution_id),
	                          'state', x.state, 'output', x.output, 'error', x.error)
	  FROM harvest_executions x
	 CROSS JOIN LATERAL (SELECT coalesce(x.idempotency_key,
	                            (SELECT f.idempotency_key FROM harvest_executions f WHERE f.execution_id = x.chain_id)) AS key) k
	 WHERE x.execution_id = ANY($1) AND k.key LIKE 'hv:child:%'
	   AND x.state NOT IN ('RUNNING', 'CONTINUED_AS_NEW') AND x.continued_to IS NULL
	UNION ALL` + flowReleaseRows + `
	UNION ALL` + closePolicyRows + `
	ON CONFLICT DO NOTHING`

// flowReleaseRows give the slot of each closed run $1 whose keeper holds
// it (flow_asked) back to the keeper, keyed by the run's chain: a chain
// closes once, whether it held the slot or still waited for it.
const flowReleaseRows = `
	SELECT x.execution_id, '` + FlowReleaseKeyPrefix + `' || coalesce(x.chain_id, x.execution_id)::text, '` + FlowReleaseKind + `',
	       jsonb_build_object('workflow', x.workflow_name, 'key', coalesce(x.flow_key, ''),
	                          'chain', coalesce(x.chain_id, x.execution_id)::text)
	  FROM harvest_executions x
	 WHERE x.execution_id = ANY($1) AND x.flow_asked AND x.state NOT IN ('QUEUED', 'RUNNING', 'CONTINUED_AS_NEW')
	   AND x.continued_to IS NULL`

// closePolicyOutbox inserts the close policy rows of the closed parents
// $1 alone.
const closePolicyOutbox = `
	INSERT INTO harvest_outbox (execution_id, command_id, kind, request)` + closePolicyRows + `
	ON CONFLICT DO NOTHING`

// closePolicyRows are the children of the closed parents $1 that were
// started, have not reported their close and are not abandoned.
const closePolicyRows = `
	SELECT c.parent_execution_id, c.command_id, 'close_child',
	       jsonb_build_object('execution_id', c.child_execution_id, 'policy', c.close_policy)
	  FROM harvest_children c
	 WHERE c.parent_execution_id = ANY($1) AND c.child_execution_id IS NOT NULL AND c.close_policy <> 'abandon'
	   AND NOT EXISTS (SELECT 1 FROM harvest_executions p
	                    WHERE p.execution_id = c.parent_execution_id AND p.state = 'TERMINATED' AND p.continued_to IS NOT NULL)
	   AND NOT EXISTS (SELECT 1 FROM harvest_signals s
	                    WHERE s.execution_id = c.parent_execution_id
	                      AND s.idempotency_key = 'hv:childdone:' || c.child_execution_id::text)`

// QueueCloseOutbox queues the insert of the outbox rows the closes of
// runs ids cause (closeOutbox); its tag counts them.
func QueueCloseOutbox(b *pgx.Batch, ids []uuid.UUID) *pgx.QueuedQuery {
	return b.Queue(closeOutbox, ids)
}

// QueueClosePolicyOutbox queues the insert of the close policy rows of
// the closed parents ids alone.
func QueueClosePolicyOutbox(b *pgx.Batch, ids []uuid.UUID) {
	b.Queue(closePolicyOutbox, ids)
}

// QueueChildStartError notes in parent's children row of command
// commandID that the child's start was refused with msg.
func QueueChildStartError(b *pgx.Batch, parent uuid.UUID, commandID, msg string) {
	b.Queue(`UPDATE harvest_children SET start_error = $3 WHERE parent_execution_id = $1 AND command_id = $2`,
		parent, commandID, msg)
}

// QueueChildStarted notes in parent's children row of command commandID
// the child run started.
func QueueChildStarted(b *pgx.Batch, parent uuid.UUID, commandID, child string) {
	b.Queue(`UPDATE harvest_children SET child_execution_id = $3 WHERE parent_execution_id = $1 AND command_id = $2`,
		parent, commandID, child)
}

// ChildRows are the children rows a write set inserts, one per child
// workflow a command initiates.
type ChildRows struct {
	parents                               []uuid.UUID
	commandIDs, names, workflowIDs, plans []string
}

// Add adds the child of parent's command commandID: its workflow name and
// id, and its parent close policy.
func (c *ChildRows) Add(parent uuid.UUID, commandID, name, workflowID, policy string) {
	c.parents = append(c.parents, parent)
	c.commandIDs, c.names = append(c.commandIDs, commandID), append(c.names, name)
	c.workflowIDs, c.plans = append(c.workflowIDs, workflowID), append(c.plans, policy)
}

// Queue queues the insert of the rows added, if any.
func (c *ChildRows) Queue(b *pgx.Batch) {
	if len(c.parents) == 0 {
		return
	}
	b.Queue(`
		INSERT INTO harvest_children (parent_execution_id, command_id, workflow_name, workflow_id, close_policy)
		SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[])
		ON CONFLICT DO NOTHING`, c.parents, c.commandIDs, c.names, c.workflowIDs, c.plans)
}

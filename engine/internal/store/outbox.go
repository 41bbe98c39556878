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

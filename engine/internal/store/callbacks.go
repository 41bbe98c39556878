package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// DueCallback is a completion callback claimed for one delivery attempt.
type DueCallback struct {
	ExecutionID uuid.UUID
	Idx         int
	URL         string
	Headers     map[string]string
	Attempt     int
}

// ClaimCallbacks claims up to limit due callbacks for one attempt each:
// their attempt is counted and their next attempt put claim ahead, so a
// node that dies while delivering leaves them due again then.
func ClaimCallbacks(ctx context.Context, q Querier, limit int, claim time.Duration) ([]DueCallback, error) {
	rows, err := q.Query(ctx, `
			WITH c AS (SELECT execution_id, idx FROM harvest_callbacks
			            WHERE status = 'due' AND next_attempt_at <= now()
			            ORDER BY next_attempt_at LIMIT $1 FOR UPDATE SKIP LOCKED)
			UPDATE harvest_callbacks cb SET attempts = cb.attempts + 1,
			       next_attempt_at = now() + $2 * interval '1 millisecond'
			  FROM c WHERE cb.execution_id = c.execution_id AND cb.idx = c.idx
			RETURNING cb.execution_id, cb.idx, cb.url, cb.headers, cb.attempts`, limit, claim.Milliseconds())
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (DueCallback, error) {
		var d DueCallback
		var headers []byte
		if err := row.Scan(&d.ExecutionID, &d.Idx, &d.URL, &headers, &d.Attempt); err != nil {
			return d, err
		}
		return d, json.Unmarshal(headers, &d.Headers)
	})
}

// CallbackDelivered marks a callback delivered.
func CallbackDelivered(ctx context.Context, q Querier, id uuid.UUID, idx int) error {
	_, err := q.Exec(ctx, `UPDATE harvest_callbacks SET status = 'delivered', delivered_at = now(), last_error = NULL
			                         WHERE execution_id = $1 AND idx = $2`, id, idx)
	return err
}

// CallbackFailed records a failed attempt: the callback's status ("due"
// to retry after delay, "failed" to give up) and its error.
func CallbackFailed(ctx context.Context, q Querier, id uuid.UUID, idx int, status, lastErr string, delay time.Duration) error {
	_, err := q.Exec(ctx, `
			UPDATE harvest_callbacks SET status = $3, last_error = $4, next_attempt_at = now() + $5 * interval '1 millisecond'
			 WHERE execution_id = $1 AND idx = $2`, id, idx, status, lastErr, delay.Milliseconds())
	return err
}

// QueueRunsCallbacksDue queues the pending completion callbacks of runs
// ids (closed) to be delivered now; the caller reads how many became due
// from its command tag.
func QueueRunsCallbacksDue(b *pgx.Batch, ids []uuid.UUID) *pgx.QueuedQuery {
	return b.Queue(`
		UPDATE harvest_callbacks SET status = 'due', next_attempt_at = now()
		 WHERE execution_id = ANY($1) AND status = 'pending'`, ids)
}

// QueueHandOverCallbacks queues the hand-over of the pending callbacks of
// runs olds[i] to their successors news[i].
func QueueHandOverCallbacks(b *pgx.Batch, olds, news []uuid.UUID) {
	b.Queue(`
		UPDATE harvest_callbacks c SET execution_id = u.new
		  FROM unnest($1::uuid[], $2::uuid[]) AS u(old, new)
		 WHERE c.execution_id = u.old AND c.status = 'pending'`, olds, news)
}

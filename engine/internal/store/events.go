package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest"
)

// ChainStart is when run from started (its first event's time), or, when
// from has no events, when run id did.
func ChainStart(ctx context.Context, q Querier, id, from uuid.UUID) (time.Time, error) {
	var started time.Time
	err := q.QueryRow(ctx, `
		SELECT coalesce((SELECT created_at FROM harvest_events WHERE execution_id = $2 AND event_id = 0),
		                (SELECT created_at FROM harvest_events WHERE execution_id = $1 AND event_id = 0))`,
		id, from).Scan(&started)
	return started, err
}

// LoadHistories reads the events of runs ids, each from the event id of
// froms at the same index, in one statement, and calls fn for each event
// in event order, run by run.
func LoadHistories(ctx context.Context, q Querier, ids []uuid.UUID, froms []int64, fn func(id uuid.UUID, ev harvest.Event) error) error {
	// A lateral subquery per run: a plain join with unnest is planned as
	// a hash join over the whole table.
	rows, err := q.Query(ctx, `
		SELECT f.id, e.event_id, e.event_type, e.data, e.created_at
		  FROM unnest($1::uuid[], $2::bigint[]) WITH ORDINALITY AS f(id, from_id, n)
		 CROSS JOIN LATERAL (
		       SELECT event_id, event_type, data, created_at FROM harvest_events
		        WHERE execution_id = f.id AND event_id >= f.from_id
		        ORDER BY event_id) e
		 ORDER BY f.n, e.event_id`, ids, froms)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scanHistoryRow(rows, fn); err != nil {
			return err
		}
	}
	return rows.Err()
}

func scanHistoryRow(rows pgx.Rows, fn func(id uuid.UUID, ev harvest.Event) error) error {
	var (
		id uuid.UUID
		ev harvest.Event
		t  string
	)
	if err := rows.Scan(&id, &ev.EventID, &t, &ev.Data, &ev.Timestamp); err != nil {
		return err
	}
	ev.Type = harvest.EventType(t)
	return fn(id, ev)
}

// HasEvent reports whether run id's history holds an event of type
// eventType.
func HasEvent(ctx context.Context, q Querier, id uuid.UUID, eventType string) (bool, error) {
	var found bool
	err := q.QueryRow(ctx, `
		SELECT EXISTS (SELECT 1 FROM harvest_events WHERE execution_id = $1 AND event_type = $2)`,
		id, eventType).Scan(&found)
	return found, err
}

// QueueInsertEvents queues the events of many runs: the nums[i]-th event
// of run ids[i], of type types[i] and data data[i] (JSON text), stamped
// with the transaction's time plus ahead microseconds (workflow time).
func QueueInsertEvents(b *pgx.Batch, ids []uuid.UUID, nums []int64, types, data []string, ahead int64) {
	b.Queue(`
		INSERT INTO harvest_events (execution_id, event_id, event_type, data, created_at)
		SELECT id, n, t, d::jsonb, now() + $5 * interval '1 microsecond'
		  FROM unnest($1::uuid[], $2::bigint[], $3::text[], $4::text[]) AS u(id, n, t, d)`,
		ids, nums, types, data, ahead)
}

// QueueInsertEventsAt is QueueInsertEvents with each event stamped at
// at[i].
func QueueInsertEventsAt(b *pgx.Batch, ids []uuid.UUID, nums []int64, types, data []string, at []time.Time) {
	b.Queue(`
			INSERT INTO harvest_events (execution_id, event_id, event_type, data, created_at)
			SELECT id, n, t, d::jsonb, at
			  FROM unnest($1::uuid[], $2::bigint[], $3::text[], $4::text[], $5::timestamptz[]) AS u(id, n, t, d, at)`,
		ids, nums, types, data, at)
}

// LoadHistory reads run id's events with event_id >= from, at most limit
// of them (limit < 0: all), in event order.
func LoadHistory(ctx context.Context, q Querier, id uuid.UUID, from int64, limit int) ([]harvest.Event, error) {
	rows, err := q.Query(ctx, `
		SELECT event_id, event_type, data, created_at FROM harvest_events
		 WHERE execution_id = $1 AND event_id >= $2
		 ORDER BY event_id
		 LIMIT CASE WHEN $3 < 0 THEN NULL ELSE $3 END`, id, from, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (harvest.Event, error) {
		var ev harvest.Event
		var t string
		err := row.Scan(&ev.EventID, &t, &ev.Data, &ev.Timestamp)
		ev.Type = harvest.EventType(t)
		return ev, err
	})
}

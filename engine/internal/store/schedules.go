package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest/engine/shardapi"
)

// Schedules (migration 013): harvest_schedules holds each schedule's
// definition, its cursor (the last nominal time fired or passed) and when
// it is next due; a deleted one keeps its row (deleted_at) so that it
// comes back with the next generation. harvest_schedule_fires holds the
// fires recorded, keyed by their fire key.

// CreateSchedule inserts schedule id (its spec as JSON, its cursor, when
// it is next due: nil for never), or brings a deleted one back with the
// next generation; pgx.ErrNoRows when a live schedule holds the id.
func CreateSchedule(ctx context.Context, q Querier, id string, spec []byte, paused bool, cursor time.Time, next *time.Time) error {
	return q.QueryRow(ctx, `
			INSERT INTO harvest_schedules (schedule_id, spec, paused, cursor_at, next_at) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (schedule_id) DO UPDATE
			   SET generation = harvest_schedules.generation + 1, spec = EXCLUDED.spec, paused = EXCLUDED.paused,
			       cursor_at = EXCLUDED.cursor_at, next_at = EXCLUDED.next_at, created_at = now(), updated_at = now(),
			       deleted_at = NULL
			 WHERE harvest_schedules.deleted_at IS NOT NULL
			RETURNING generation`, id, spec, paused, cursor, next).Scan(new(int64))
}

// scheduleColumns are the columns scanSchedule reads.
const scheduleColumns = `schedule_id, generation, spec, paused, cursor_at, created_at, updated_at`

// scanSchedule scans a schedule's scheduleColumns and decodes its spec.
func scanSchedule(row pgx.Row) (shardapi.Schedule, error) {
	var s shardapi.Schedule
	var raw []byte
	if err := row.Scan(&s.ID, &s.Generation, &raw, &s.Paused, &s.Cursor, &s.CreatedAt, &s.UpdatedAt); err != nil {
		return s, err
	}
	if err := json.Unmarshal(raw, &s.Spec); err != nil {
		return s, fmt.Errorf("decode schedule %s: %w", s.ID, err)
	}
	return s, nil
}

// ReadSchedule reads live schedule id (without its fires and next fire
// times); pgx.ErrNoRows when there is none.
func ReadSchedule(ctx context.Context, q Querier, id string) (shardapi.Schedule, error) {
	return scanSchedule(q.QueryRow(ctx, `SELECT `+scheduleColumns+` FROM harvest_schedules
		 WHERE schedule_id = $1 AND deleted_at IS NULL`, id))
}

// LockSchedule reads and locks live schedule id's row, as ReadSchedule
// reads it; pgx.ErrNoRows when there is none.
func LockSchedule(ctx context.Context, q Querier, id string) (shardapi.Schedule, error) {
	return scanSchedule(q.QueryRow(ctx, `SELECT `+scheduleColumns+` FROM harvest_schedules
		 WHERE schedule_id = $1 AND deleted_at IS NULL FOR UPDATE`, id))
}

// ListSchedules reads the live schedules, by id, as ReadSchedule reads
// them.
func ListSchedules(ctx context.Context, q Querier) ([]shardapi.Schedule, error) {
	rows, err := q.Query(ctx, `SELECT `+scheduleColumns+` FROM harvest_schedules
		 WHERE deleted_at IS NULL ORDER BY schedule_id`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (shardapi.Schedule, error) { return scanSchedule(row) })
}

// ScheduleFires reads up to limit fires of schedule id's generation,
// newest first, a pending one with its outbox row's last error as its
// reason when it has none.
func ScheduleFires(ctx context.Context, q Querier, id string, generation int64, limit int) ([]shardapi.ScheduleFire, error) {
	rows, err := q.Query(ctx, `
		SELECT f.fire_key, f.nominal_at, f.outcome, coalesce(nullif(f.reason, ''), o.last_error, ''), f.triggered, f.workflow_id,
		       coalesce(f.execution_id::text, ''), f.updated_at
		  FROM harvest_schedule_fires f
		  LEFT JOIN harvest_outbox o ON o.execution_id = '00000000-0000-0000-0000-000000000000' AND o.kind = 'schedule_start'
		       AND o.command_id = f.fire_key AND f.outcome = 'pending'
		 WHERE f.schedule_id = $1 AND f.generation = $2 ORDER BY f.nominal_at DESC LIMIT $3`, id, generation, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[shardapi.ScheduleFire])
}

// DeleteSchedule deletes live schedule id (it keeps its row, not due) and
// its fires but the pending ones, and counts the schedules deleted.
func DeleteSchedule(ctx context.Context, q Querier, id string) (int, error) {
	return queryCount(ctx, q, `
		WITH d AS (UPDATE harvest_schedules SET deleted_at = now(), next_at = NULL, updated_at = now()
		            WHERE schedule_id = $1 AND deleted_at IS NULL RETURNING schedule_id),
		     f AS (DELETE FROM harvest_schedule_fires WHERE schedule_id IN (SELECT schedule_id FROM d) AND outcome <> 'pending')
		SELECT count(*) FROM d`, id)
}

// PauseSchedule pauses live schedule id and counts the schedules it
// changed.
func PauseSchedule(ctx context.Context, q Querier, id string) (int, error) {
	return queryCount(ctx, q, `
		WITH u AS (UPDATE harvest_schedules SET paused = true, updated_at = now()
		            WHERE schedule_id = $1 AND deleted_at IS NULL RETURNING 1)
		SELECT count(*) FROM u`, id)
}

// ResumeSchedule resumes live schedule id; a paused one has its cursor
// moved to now (if before) and is due at now. It counts the schedules it
// changed.
func ResumeSchedule(ctx context.Context, q Querier, id string, now time.Time) (int, error) {
	return queryCount(ctx, q, `
		WITH u AS (UPDATE harvest_schedules SET paused = false, updated_at = now(),
		                  cursor_at = CASE WHEN paused THEN greatest(cursor_at, $2) ELSE cursor_at END,
		                  next_at = CASE WHEN paused THEN $2 ELSE next_at END
		            WHERE schedule_id = $1 AND deleted_at IS NULL RETURNING 1)
		SELECT count(*) FROM u`, id, now)
}

// queryCount runs a statement that answers one count.
func queryCount(ctx context.Context, q Querier, sql string, args ...any) (int, error) {
	var n int
	err := q.QueryRow(ctx, sql, args...).Scan(&n)
	return n, err
}

// The fire loop's statements.

// DueSchedules are up to limit live schedules, not paused, due at now,
// the earliest due first.
func DueSchedules(ctx context.Context, q Querier, now time.Time, limit int) ([]string, error) {
	rows, err := q.Query(ctx, `
		SELECT schedule_id FROM harvest_schedules
		 WHERE deleted_at IS NULL AND NOT paused AND next_at <= $1 ORDER BY next_at LIMIT $2`, now, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// PendingFires counts the fires of schedule id's generation whose start
// is in progress.
func PendingFires(ctx context.Context, q Querier, id string, generation int64) (int, error) {
	return queryCount(ctx, q, `SELECT count(*) FROM harvest_schedule_fires
		 WHERE schedule_id = $1 AND generation = $2 AND outcome = 'pending'`, id, generation)
}

// QueueAdvanceSchedule queues the move of schedule id's cursor to cursor,
// due next (nil: never).
func QueueAdvanceSchedule(b *pgx.Batch, id string, cursor time.Time, next *time.Time) {
	b.Queue(`UPDATE harvest_schedules SET cursor_at = $2, next_at = $3, updated_at = now() WHERE schedule_id = $1`,
		id, cursor, next)
}

// pruneFires deletes the recorded fires of schedule $1 past the newest $2
// (never a pending one: its outbox row records into it).
const pruneFires = `
	DELETE FROM harvest_schedule_fires WHERE fire_key IN (
		SELECT fire_key FROM harvest_schedule_fires WHERE schedule_id = $1 AND outcome <> 'pending'
		 ORDER BY nominal_at DESC OFFSET $2)`

// QueuePruneFires queues the delete of schedule id's recorded fires past
// the newest kept (see pruneFires).
func QueuePruneFires(b *pgx.Batch, id string, kept int) {
	b.Queue(pruneFires, id, kept)
}

// Fire is a fires row: fire Key of schedule ScheduleID's Generation at
// its Nominal time, its Outcome and why (Reason), whether a trigger
// fired it, and the workflow id of its run.
type Fire struct {
	Key, ScheduleID string
	Generation      int64
	Nominal         time.Time
	Outcome, Reason string
	Triggered       bool
	WorkflowID      string
}

// FireRows are the fires rows a transaction inserts, by column.
type FireRows struct {
	keys, ids, outcomes, reasons, workflowIDs []string
	generations                               []int64
	nominals                                  []time.Time
	triggered                                 []bool
}

// Add adds fire f.
func (r *FireRows) Add(f Fire) {
	r.keys, r.ids, r.outcomes = append(r.keys, f.Key), append(r.ids, f.ScheduleID), append(r.outcomes, f.Outcome)
	r.reasons, r.workflowIDs = append(r.reasons, f.Reason), append(r.workflowIDs, f.WorkflowID)
	r.generations, r.nominals, r.triggered = append(r.generations, f.Generation), append(r.nominals, f.Nominal), append(r.triggered, f.Triggered)
}

// Queue queues the rows' insert (none when there are none); a fire
// recorded before keeps its row.
func (r *FireRows) Queue(b *pgx.Batch) {
	if len(r.keys) == 0 {
		return
	}
	b.Queue(`
		INSERT INTO harvest_schedule_fires (fire_key, schedule_id, generation, nominal_at, outcome, reason, triggered, workflow_id)
		SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::timestamptz[], $5::text[], $6::text[], $7::bool[], $8::text[])
		ON CONFLICT DO NOTHING`, r.keys, r.ids, r.generations, r.nominals, r.outcomes, r.reasons, r.triggered, r.workflowIDs)
}

// NextScheduleAt is when the earliest live schedule, not paused, is due
// (nil: none).
func NextScheduleAt(ctx context.Context, q Querier) (*time.Time, error) {
	var next *time.Time
	err := q.QueryRow(ctx, `SELECT min(next_at) FROM harvest_schedules WHERE deleted_at IS NULL AND NOT paused`).Scan(&next)
	return next, err
}

// ScheduleGeneration is live schedule id's generation; pgx.ErrNoRows
// when there is none.
func ScheduleGeneration(ctx context.Context, q Querier, id string) (int64, error) {
	var generation int64
	err := q.QueryRow(ctx, `SELECT generation FROM harvest_schedules WHERE schedule_id = $1 AND deleted_at IS NULL`, id).Scan(&generation)
	return generation, err
}

// FireByKey reads the fire recorded under key; pgx.ErrNoRows when there
// is none.
func FireByKey(ctx context.Context, q Querier, key string) (shardapi.ScheduleFire, error) {
	var f shardapi.ScheduleFire
	err := q.QueryRow(ctx, `
		SELECT fire_key, nominal_at, outcome, reason, triggered, workflow_id, coalesce(execution_id::text, ''), updated_at
		  FROM harvest_schedule_fires WHERE fire_key = $1`, key).Scan(&f.Key, &f.NominalTime, &f.Outcome, &f.Reason,
		&f.Triggered, &f.WorkflowID, &f.ExecutionID, &f.UpdatedAt)
	return f, err
}

// QueueFireOutcome queues the record of a schedule fire's answer in its
// fires row (gone if the schedule was deleted meanwhile: then nothing is
// recorded): its outcome, why, and the run it started ("" for none).
func QueueFireOutcome(b *pgx.Batch, key, outcome, reason, executionID string) {
	b.Queue(`
		UPDATE harvest_schedule_fires SET outcome = $2, reason = $3, execution_id = nullif($4, '')::uuid, updated_at = now()
		 WHERE fire_key = $1`, key, outcome, reason, executionID)
}

// The catalog's copies (internal/schedule/sync.go): a catalog holds the
// definitions and their generations, the shard copies them.

// SyncSchedule copies generation of schedule id (its spec as JSON, at
// catalog revision revision) over an older generation, or inserts it,
// with its cursor and when it is next due (nil: never); it counts the
// rows it wrote (none when the copy's generation is not older).
func SyncSchedule(ctx context.Context, q Querier, id string, generation int64, spec []byte, paused bool,
	cursor time.Time, next *time.Time, revision int64) (int, error) {
	return queryCount(ctx, q, `
			WITH up AS (
			  INSERT INTO harvest_schedules (schedule_id, generation, spec, paused, cursor_at, next_at, catalog_revision)
			  VALUES ($1, $2, $3, $4, $5, $6, $7)
			  ON CONFLICT (schedule_id) DO UPDATE
			     SET generation = EXCLUDED.generation, spec = EXCLUDED.spec, paused = EXCLUDED.paused,
			         cursor_at = EXCLUDED.cursor_at, next_at = EXCLUDED.next_at, created_at = now(), updated_at = now(),
			         deleted_at = NULL, catalog_revision = EXCLUDED.catalog_revision
			   WHERE harvest_schedules.generation < EXCLUDED.generation
			  RETURNING 1)
			SELECT count(*) FROM up`, id, generation, spec, paused, cursor, next, revision)
}

// SyncSchedulePaused sets paused on the copy of schedule id's generation
// unless it holds a catalog revision not older than revision (0: none),
// records the revision, and moves a resumed copy's cursor to now (if
// before), due at now; it reports whether paused changed.
func SyncSchedulePaused(ctx context.Context, q Querier, id string, generation int64, paused bool, revision int64, now time.Time) (bool, error) {
	var changed bool
	err := q.QueryRow(ctx, `
		WITH old AS (SELECT paused FROM harvest_schedules
		              WHERE schedule_id = $1 AND generation = $2 AND deleted_at IS NULL
		                AND ($4 = 0 OR catalog_revision < $4) FOR UPDATE),
		     up AS (UPDATE harvest_schedules s SET paused = $3, catalog_revision = greatest(s.catalog_revision, $4),
		                   updated_at = CASE WHEN old.paused <> $3 THEN now() ELSE s.updated_at END,
		                   cursor_at = CASE WHEN old.paused AND NOT $3 THEN greatest(s.cursor_at, $5) ELSE s.cursor_at END,
		                   next_at = CASE WHEN old.paused AND NOT $3 THEN $5 ELSE s.next_at END
		              FROM old WHERE s.schedule_id = $1
		            RETURNING old.paused <> $3 AS changed)
		SELECT coalesce(bool_or(changed), false) FROM up`, id, generation, paused, revision, now).Scan(&changed)
	return changed, err
}

// SyncScheduleDeleted deletes the copy of schedule id's generation or an
// older one (it keeps its row, not due) and its fires but the pending
// ones, and counts the schedules deleted.
func SyncScheduleDeleted(ctx context.Context, q Querier, id string, generation int64) (int, error) {
	return queryCount(ctx, q, `
			WITH d AS (UPDATE harvest_schedules SET deleted_at = now(), next_at = NULL, updated_at = now()
			            WHERE schedule_id = $1 AND generation <= $2 AND deleted_at IS NULL RETURNING schedule_id),
			     f AS (DELETE FROM harvest_schedule_fires WHERE schedule_id IN (SELECT schedule_id FROM d) AND outcome <> 'pending')
			SELECT count(*) FROM d`, id, generation)
}

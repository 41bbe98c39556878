package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Flow control of activities (migration 023): an attempt of an activity
// under a concurrency limit holds a slot from its claim until its outcome
// is recorded. A slot is the 'running' status of a task whose flow_key is
// set: the claim sets the key (from the task's input), the outcome deletes
// the task or makes it pending again, and a reclaimed attempt keeps the
// slot its task held. Only the shard owner's activity loop claims, one
// claim at a time behind the fence, so one statement's count cannot race
// another claim; such tasks are never dispatched directly by the batch
// that schedules them (runs.Direct.Limited).

// ActivityLimits are the concurrency limits of activities, one per
// index: the activity name, the JSON text of its key pointer's reference
// tokens (an array of strings, empty for a limit on the name alone) and
// its most running attempts per key.
type ActivityLimits struct {
	Names, Paths []string
	Max          []int32
}

// activityKeySQL is the key of task t under limit l: the text of the
// input's value at the limit's path (” when the value is missing or
// null, or the limit has no path).
const activityKeySQL = `CASE WHEN cardinality(l.path) = 0 THEN '' ELSE coalesce(t.input #>> l.path, '') END`

// limitedClaim is the claim's choice of tasks under limits ($5 names, $6
// paths, $7 limits): the due tasks as claimDueSQL (or, with reclaim,
// claimDueOrReclaimSQL) choose them, except that a pending task of a
// limited activity is passed over when its key has no free slot (so that
// a full key's backlog does not hold back the others), and of the
// pending tasks of one key only as many as it has free slots are taken,
// oldest first. A reclaimed running task keeps its slot. c is the choice:
// each task and its key (NULL under no limit). A full key's backlog is
// read again by each claim: a cost in the size of the backlog.
func limitedClaim(reclaim bool) string {
	due := `t.status = 'pending' AND t.scheduled_at <= now() + $4 * interval '1 microsecond'`
	if reclaim {
		due = `(` + due + `) OR (t.status = 'running' AND NOT t.async AND (t.locked_until < now() OR t.claim_epoch < $1))`
	}
	return `lim AS (
	    SELECT l.name, ARRAY(SELECT jsonb_array_elements_text(l.path::jsonb)) AS path, l.max
	      FROM unnest($5::text[], $6::text[], $7::int[]) AS l(name, path, max)
	), due AS (
	    SELECT t.task_id, t.status, t.scheduled_at, t.activity_name,
	           CASE WHEN l.name IS NOT NULL THEN ` + activityKeySQL + ` END AS fk, r.room
	      FROM harvest_tasks t
	      LEFT JOIN lim l ON l.name = t.activity_name
	      LEFT JOIN LATERAL (
	          SELECT l.max - count(*) AS room FROM harvest_tasks h
	           WHERE h.status = 'running' AND h.flow_key IS NOT NULL AND h.activity_name = t.activity_name
	             AND h.flow_key = ` + activityKeySQL + `
	      ) r ON l.name IS NOT NULL AND t.status = 'pending'
	     WHERE (` + due + `) AND (r.room IS NULL OR r.room > 0)
	     ORDER BY t.scheduled_at
	     LIMIT $2 FOR UPDATE OF t SKIP LOCKED
	), ranked AS (
	    SELECT d.*, row_number() OVER (PARTITION BY d.activity_name, d.fk, d.status
	                                   ORDER BY d.scheduled_at, d.task_id) AS pick
	      FROM due d
	), c AS (
	    SELECT task_id, fk FROM ranked WHERE room IS NULL OR pick <= room
	)`
}

// ActivityOccupancy is one activity key's use of its limit: the attempts
// holding a slot and the tasks due or waiting for one.
type ActivityOccupancy struct {
	ActivityName string `json:"activity_name"`
	Key          string `json:"key"`
	Running      int64  `json:"running"`
	Waiting      int64  `json:"waiting"`
}

// ActivityFlowOccupancy reads, per limited activity and key, the attempts
// running and the tasks waiting (pending, due or not).
func ActivityFlowOccupancy(ctx context.Context, q Querier, lim ActivityLimits) ([]ActivityOccupancy, error) {
	rows, err := q.Query(ctx, `
		WITH lim AS (
		    SELECT l.name, ARRAY(SELECT jsonb_array_elements_text(l.path::jsonb)) AS path
		      FROM unnest($1::text[], $2::text[]) AS l(name, path)
		)
		SELECT t.activity_name, coalesce(t.flow_key, `+activityKeySQL+`) AS k,
		       count(*) FILTER (WHERE t.status = 'running'), count(*) FILTER (WHERE t.status = 'pending')
		  FROM harvest_tasks t JOIN lim l ON l.name = t.activity_name
		 GROUP BY 1, 2
		 ORDER BY 1, 2`, lim.Names, lim.Paths)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[ActivityOccupancy])
}

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

// ActivityLimits are the limits of activities, one per index: the
// activity name; its concurrency limit (Max, 0 for none) and the JSON
// text of its key pointer's reference tokens (Paths: an array of strings,
// empty for a limit on the name alone); its rate limit (Rate a second, 0
// for none, up to Burst at once) and its key's path (RatePaths).
type ActivityLimits struct {
	Names, Paths []string
	Max          []int32
	RatePaths    []string
	Rate, Burst  []float64
}

// Limited reports whether some activity has a limit.
func (l ActivityLimits) Limited() bool { return len(l.Names) > 0 }

// activityKeySQL is the key of task t under path p: the text of the
// input's value at the path (” when the value is missing or null, or the
// path is empty).
func activityKeySQL(p string) string {
	return `CASE WHEN cardinality(` + p + `) = 0 THEN '' ELSE coalesce(t.input #>> ` + p + `, '') END`
}

// limitedClaim is the claim's choice of tasks under limits ($5 names, $6
// paths, $7 concurrency limits, $8 rate paths, $9 rates, $10 bursts): the
// due tasks as claimDueSQL (or, with reclaim, claimDueOrReclaimSQL) choose
// them, except that a pending task of a limited activity is passed over
// when its key has no free slot or its bucket no whole token (so that a
// full key's backlog does not hold back the others), and of the pending
// tasks of one key only as many as it has free slots and tokens are
// taken, by priority and then oldest first. A reclaimed running task keeps its slot and takes
// no token. c is the choice: each task and its concurrency key (NULL under
// no concurrency limit); charged takes the tokens of the chosen tasks
// from their buckets (a bucket without a row is full). A full key's
// backlog is read again by each claim: a cost in the size of the backlog.
func limitedClaim(reclaim bool) string {
	pending := `t.status = 'pending' AND t.scheduled_at <= now() + $4 * interval '1 microsecond'`
	lo := pending + ` AND t.priority = 3`
	if reclaim {
		lo = `(` + lo + `) OR (t.status = 'running' AND NOT t.async AND (t.locked_until < now() OR t.claim_epoch < $1))`
	}
	order := `priority, d.scheduled_at, d.task_id`
	return `lim AS (
	    SELECT l.name, ARRAY(SELECT jsonb_array_elements_text(l.path::jsonb)) AS path, nullif(l.max, 0) AS max,
	           ARRAY(SELECT jsonb_array_elements_text(l.rpath::jsonb)) AS rpath, nullif(l.rate, 0) AS rate, l.burst
	      FROM unnest($5::text[], $6::text[], $7::int[], $8::text[], $9::float8[], $10::float8[])
	           AS l(name, path, max, rpath, rate, burst)
	), ` + limitedDue("due_hi", pending+` AND t.priority <> 3`, "t.priority, t.scheduled_at") + `,
	` + limitedDue("due_lo", lo, "t.scheduled_at") + `,
	due AS (SELECT * FROM due_hi UNION ALL SELECT * FROM due_lo),
	ranked AS (
	    SELECT d.*,
	           row_number() OVER (PARTITION BY d.activity_name, d.fk, d.status ORDER BY d.` + order + `) AS pick,
	           row_number() OVER (PARTITION BY d.activity_name, d.rk, d.status ORDER BY d.` + order + `) AS rpick
	      FROM due d
	), c AS (
	    SELECT task_id, fk, activity_name, rk, avail FROM ranked
	     WHERE (room IS NULL OR pick <= room) AND (avail IS NULL OR rpick <= floor(avail))
	     ORDER BY priority, scheduled_at LIMIT $2
	), charged AS (
	    INSERT INTO harvest_rate_buckets AS k (activity_name, key, tokens, updated_at)
	    SELECT activity_name, rk, max(avail) - count(*), now() FROM c
	     WHERE avail IS NOT NULL
	     GROUP BY activity_name, rk
	    ON CONFLICT (activity_name, key) DO UPDATE SET tokens = EXCLUDED.tokens, updated_at = EXCLUDED.updated_at
	)`
}

// limitedDue is a CTE name of the limited claim's candidates: the tasks
// that match where (pending and due, or reclaimable), in order, passed
// over when their key has no free slot or their bucket no whole token.
// The claim reads those of a priority other than the default (due_hi,
// from their own index) and those of the default (due_lo, in the due
// index's order: a scan that stops at the limit), as claimDueSQL does.
func limitedDue(name, where, order string) string {
	return name + ` AS (
	    SELECT t.task_id, t.status, t.priority, t.scheduled_at, t.activity_name,
	           CASE WHEN l.max IS NOT NULL THEN ` + activityKeySQL("l.path") + ` END AS fk,
	           CASE WHEN l.rate IS NOT NULL THEN ` + activityKeySQL("l.rpath") + ` END AS rk,
	           r.room, b.avail
	      FROM harvest_tasks t
	      LEFT JOIN lim l ON l.name = t.activity_name
	      LEFT JOIN LATERAL (
	          SELECT l.max - count(*) AS room FROM harvest_tasks h
	           WHERE h.status = 'running' AND h.flow_key IS NOT NULL AND h.activity_name = t.activity_name
	             AND h.flow_key = ` + activityKeySQL("l.path") + `
	      ) r ON l.max IS NOT NULL AND t.status = 'pending'
	      LEFT JOIN LATERAL (
	          SELECT coalesce((SELECT least(l.burst, k.tokens + extract(epoch FROM now() - k.updated_at) * l.rate)
	                             FROM harvest_rate_buckets k
	                            WHERE k.activity_name = t.activity_name AND k.key = ` + activityKeySQL("l.rpath") + `),
	                          l.burst) AS avail
	      ) b ON l.rate IS NOT NULL AND t.status = 'pending'
	     WHERE (` + where + `) AND (r.room IS NULL OR r.room > 0) AND (b.avail IS NULL OR b.avail >= 1)
	     ORDER BY ` + order + `
	     LIMIT $2 FOR UPDATE OF t SKIP LOCKED
	)`
}

// AnyDueOf reports whether a task of one of the activities names is
// pending and due (ahead: the clock's offset in microseconds).
func AnyDueOf(ctx context.Context, q Querier, names []string, ahead int64) (bool, error) {
	var found bool
	err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM harvest_tasks
	                         WHERE status = 'pending' AND scheduled_at <= now() + $2 * interval '1 microsecond'
	                           AND activity_name = ANY($1))`, names, ahead).Scan(&found)
	return found, err
}

// ActivityOccupancy is one activity key's use of its limit: the attempts
// holding a slot and the tasks due or waiting for one.
type ActivityOccupancy struct {
	ActivityName string `json:"activity_name"`
	Key          string `json:"key"`
	Running      int64  `json:"running"`
	Waiting      int64  `json:"waiting"`
}

// ActivityFlowOccupancy reads, per activity under a concurrency limit
// (lim's names and paths) and key, the attempts running and the tasks
// waiting (pending, due or not).
func ActivityFlowOccupancy(ctx context.Context, q Querier, lim ActivityLimits) ([]ActivityOccupancy, error) {
	rows, err := q.Query(ctx, `
		WITH lim AS (
		    SELECT l.name, ARRAY(SELECT jsonb_array_elements_text(l.path::jsonb)) AS path
		      FROM unnest($1::text[], $2::text[]) AS l(name, path)
		)
		SELECT t.activity_name, coalesce(t.flow_key, `+activityKeySQL("l.path")+`) AS k,
		       count(*) FILTER (WHERE t.status = 'running'), count(*) FILTER (WHERE t.status = 'pending')
		  FROM harvest_tasks t JOIN lim l ON l.name = t.activity_name
		 GROUP BY 1, 2
		 ORDER BY 1, 2`, lim.Names, lim.Paths)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[ActivityOccupancy])
}

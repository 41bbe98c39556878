package e2e

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// readWaiting reads, for each open run, what it waits on: its last
// event, its activity tasks and its timers (due times from the database's
// now), so that a run reported open after the heal says why.
func (st *DBState) readWaiting(ctx context.Context, conn *pgx.Conn) error {
	rows, err := conn.Query(ctx, `
		SELECT x.execution_id::text,
		       coalesce((SELECT e.event_type FROM harvest_events e WHERE e.execution_id = x.execution_id
		                  ORDER BY e.event_id DESC LIMIT 1), ''),
		       coalesce((SELECT string_agg(format('task %s %s attempt %s due %ss locked %ss error %s', t.activity_name, t.status,
		                        t.attempt, round(extract(epoch FROM t.scheduled_at - now())),
		                        coalesce(round(extract(epoch FROM t.locked_until - now()))::text, '-'),
		                        left(coalesce(t.last_error::text, '-'), 160)), '; ')
		                   FROM harvest_tasks t WHERE t.execution_id = x.execution_id), ''),
		       coalesce((SELECT string_agg(format('timer %s in %ss', m.timer_id, round(extract(epoch FROM m.fire_at - now()))), '; ')
		                   FROM harvest_timers m WHERE m.execution_id = x.execution_id), '')
		  FROM harvest_executions x
		 WHERE x.state IN ('RUNNING', 'QUEUED')`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id, last, tasks, timers string
		if err := rows.Scan(&id, &last, &tasks, &timers); err != nil {
			return err
		}
		if x := st.execs[id]; x != nil {
			x.waiting = waitingText(last, tasks, timers)
		}
	}
	return rows.Err()
}

// waitingText is an open run's waiting line (see readWaiting).
func waitingText(last string, parts ...string) string {
	out := []string{fmt.Sprintf("last event %s", last)}
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, "; ")
}

package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// CountByState counts runs by state, of workflow name and id when they
// are not empty, created in [after, before) (nil: unbounded), in one
// grouped read (the state_list index holds every column it needs when no
// name or id is given); fn is called for each state with runs.
func CountByState(ctx context.Context, q Querier, name, id string, after, before *time.Time, fn func(state string, n int64)) error {
	rows, err := q.Query(ctx, `
		SELECT state, count(*) FROM harvest_executions
		 WHERE ($1 = '' OR workflow_name = $1)
		   AND ($2 = '' OR workflow_id = $2)
		   AND ($3::timestamptz IS NULL OR created_at >= $3)
		   AND ($4::timestamptz IS NULL OR created_at < $4)
		 GROUP BY state`, pgx.QueryExecModeSimpleProtocol, name, id, after, before)
	if err != nil {
		return err
	}
	var state string
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&state, &n}, func() error { fn(state, n); return nil })
	return err
}

// ExecRowColumns are the columns a run row is scanned from, after
// execution_id where a query selects it.
const ExecRowColumns = `workflow_name, workflow_id, state, next_event_id, created_at,
		       coalesce(chain_id, execution_id), continued_to`

// ChainLatestJoin joins, to a claim's run e, the current run l of its
// chain when e continued as new (l's columns are NULL otherwise).
const ChainLatestJoin = `
	LEFT JOIN LATERAL (
	      SELECT l.execution_id, l.state FROM harvest_executions l
	       WHERE l.chain_id = coalesce(e.chain_id, e.execution_id) AND l.continued_to IS NULL
	       LIMIT 1) l ON e.continued_to IS NOT NULL`

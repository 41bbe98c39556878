package store

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest/engine/shardapi"
)

// The children a run started, harvest_children: one row per child start
// command, with the outcome of its start.

// ChildRow is a child a run started (its State left empty) and the state
// its close signal to the parent reported, nil before one did.
type ChildRow struct {
	shardapi.Child
	Closed *string
}

// Children reads the children run id started, in command order.
func Children(ctx context.Context, q Querier, id uuid.UUID) ([]ChildRow, error) {
	rows, err := q.Query(ctx, `
		SELECT c.command_id, c.workflow_name, c.workflow_id, c.child_execution_id, c.close_policy,
		       coalesce(c.start_error, ''), c.created_at,
		       (SELECT ev.data->'payload'->>'state' FROM harvest_signals s
		          JOIN harvest_events ev ON ev.execution_id = s.execution_id AND ev.event_id = s.event_id
		         WHERE s.execution_id = c.parent_execution_id
		           AND s.idempotency_key = 'hv:childdone:' || c.child_execution_id::text)
		  FROM harvest_children c WHERE c.parent_execution_id = $1
		 ORDER BY length(c.command_id), c.command_id`, id)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (ChildRow, error) {
		var c ChildRow
		err := row.Scan(&c.CommandID, &c.WorkflowName, &c.WorkflowID, &c.ExecutionID, &c.ParentClosePolicy,
			&c.StartError, &c.InitiatedAt, &c.Closed)
		return c, err
	})
}

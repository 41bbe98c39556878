package engine

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Children lists the children run id started, in command order
// (ErrNotFound when the run does not exist).
func (e *Engine) Children(ctx context.Context, id uuid.UUID) ([]Child, error) {
	if _, err := e.GetExecution(ctx, id); err != nil {
		return nil, err
	}
	return e.childrenOf(ctx, id)
}

func (e *Engine) childrenOf(ctx context.Context, id uuid.UUID) ([]Child, error) {
	rows, err := e.pool.Query(ctx, `
		SELECT c.command_id, c.workflow_name, c.workflow_id, c.child_execution_id, c.close_policy,
		       coalesce(c.start_error, ''), c.created_at,
		       (SELECT ev.data->'payload'->>'state' FROM harvest_signals s
		          JOIN harvest_events ev ON ev.execution_id = s.execution_id AND ev.event_id = s.event_id
		         WHERE s.execution_id = c.parent_execution_id
		           AND s.idempotency_key = 'hv:childdone:' || c.child_execution_id::text)
		  FROM harvest_children c WHERE c.parent_execution_id = $1
		 ORDER BY length(c.command_id), c.command_id`, id)
	if err != nil {
		return nil, fmt.Errorf("children of %s: %w", id, err)
	}
	out, err := pgx.CollectRows(rows, scanChild)
	if err != nil {
		return nil, fmt.Errorf("children of %s: %w", id, err)
	}
	return out, nil
}

func scanChild(row pgx.CollectableRow) (Child, error) {
	var (
		c      Child
		closed *string
	)
	err := row.Scan(&c.CommandID, &c.WorkflowName, &c.WorkflowID, &c.ExecutionID, &c.ParentClosePolicy,
		&c.StartError, &c.InitiatedAt, &closed)
	switch {
	case closed != nil:
		c.State = *closed
	case c.StartError != "":
		c.State = ChildStartFailed
	case c.ExecutionID != nil:
		c.State = StateRunning
	default:
		c.State = ChildInitiated
	}
	return c, err
}

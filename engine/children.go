package engine

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/harvestd/harvest/engine/internal/store"
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
	rows, err := store.Children(ctx, e.pool, id)
	if err != nil {
		return nil, fmt.Errorf("children of %s: %w", id, err)
	}
	out := make([]Child, len(rows))
	for i, r := range rows {
		out[i] = childOf(r)
	}
	return out, nil
}

// childOf is the child of a row, in the state its row says.
func childOf(r store.ChildRow) Child {
	c := r.Child
	switch {
	case r.Closed != nil:
		c.State = *r.Closed
	case c.StartError != "":
		c.State = ChildStartFailed
	case c.ExecutionID != nil:
		c.State = StateRunning
	default:
		c.State = ChildInitiated
	}
	return c
}

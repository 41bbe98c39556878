package read

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
)

// Children lists the children run id started, in command order
// (ErrNotFound when the run does not exist).
func (r *Reader) Children(ctx context.Context, id uuid.UUID) ([]shardapi.Child, error) {
	if _, err := r.Get(ctx, id); err != nil {
		return nil, err
	}
	return r.childrenOf(ctx, id)
}

func (r *Reader) childrenOf(ctx context.Context, id uuid.UUID) ([]shardapi.Child, error) {
	rows, err := store.Children(ctx, r.d.Pool, id)
	if err != nil {
		return nil, fmt.Errorf("children of %s: %w", id, err)
	}
	out := make([]shardapi.Child, len(rows))
	for i, r := range rows {
		out[i] = childOf(r)
	}
	return out, nil
}

// childOf is the child of a row, in the state its row says.
func childOf(r store.ChildRow) shardapi.Child {
	c := r.Child
	switch {
	case r.Closed != nil:
		c.State = *r.Closed
	case c.StartError != "":
		c.State = shardapi.ChildStartFailed
	case c.ExecutionID != nil:
		c.State = shardapi.StateRunning
	default:
		c.State = shardapi.ChildInitiated
	}
	return c
}

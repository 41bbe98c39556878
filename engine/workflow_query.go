package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/store"
)

// Query answers the query name of a run, running or closed, for at most
// Config.QueryTimeout: from the run's cached state when the shard holds it
// current (statecache.go), else by reading the whole history (no write,
// no lock) and replaying it through the workflow code
// (harvest.Registry.RunQuery).
// Errors: ErrNotFound, harvest.ErrUnknownQuery, harvest.ErrQueryCommand,
// harvest.ErrQueryArgs, ErrQueryTimeout, or the handler's own error.
func (e *Engine) Query(ctx context.Context, id uuid.UUID, name string, args json.RawMessage) (json.RawMessage, error) {
	qctx, cancel := context.WithTimeout(ctx, e.cfg.QueryTimeout)
	defer cancel()
	out, err := e.query(qctx, id, name, args)
	if err != nil && ctx.Err() == nil && errors.Is(qctx.Err(), context.DeadlineExceeded) {
		return nil, fmt.Errorf("query %q of %s: %w after %s", name, id, ErrQueryTimeout, e.cfg.QueryTimeout)
	}
	return out, err
}

func (e *Engine) query(ctx context.Context, id uuid.UUID, name string, args json.RawMessage) (json.RawMessage, error) {
	x, err := e.GetExecution(ctx, id)
	if err != nil {
		return nil, err
	}
	if x.State == StateRunning {
		if out, ok, err := e.cachedQuery(id, x.EventCount, name, args); ok {
			return out, err
		}
	}
	history, err := loadHistory(ctx, e.pool, &store.Exec{ID: id}, 0, -1)
	if err != nil {
		return nil, err
	}
	return e.reg.RunQuery(ctx, harvest.WorkflowTask{
		Info:    harvest.WorkflowInfo{ExecutionID: id.String(), WorkflowName: x.WorkflowName, WorkflowID: x.WorkflowID},
		History: history,
	}, name, args)
}

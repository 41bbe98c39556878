package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/harvestd/harvest/engine/internal/outbox"
	"github.com/harvestd/harvest/engine/internal/runs"
	"github.com/harvestd/harvest/engine/internal/wftask"
)

// newRunner makes the workflow-task runner (internal/wftask).
func (e *Engine) newRunner() *wftask.Runner {
	return wftask.New(wftask.Deps{Reg: e.reg, Pool: e.pool, Fence: e.fence, Settle: e.settle, Route: outbox.Route,
		Reserve: func(n int) *runs.Direct { return e.act.Reserve(n) }, Owning: e.Owning, Crash: e.cfg.crashHook,
		Log: e.log.With().Str("service", "workflow_tasks").Logger(), Wake: e.bus.Workflow, Poll: e.cfg.PollInterval,
		Batch: e.cfg.WorkflowTaskBatch, TaskTimeout: e.cfg.WorkflowTaskTimeout, RetryMax: e.cfg.TaskRetryMax,
		CacheEntries: e.cfg.StateCacheEntries, CacheBytes: e.cfg.StateCacheBytes})
}

// Query answers the query name of a run, running or closed, for at most
// Config.QueryTimeout: from the run's cached state when the shard holds it
// current, else by replaying its history (wftask.Runner.Query).
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
	return e.wf.Query(ctx, x, name, args)
}

// StateCacheStats reports the state cache's contents and counters.
func (e *Engine) StateCacheStats() StateCacheStats { return e.wf.CacheStats() }

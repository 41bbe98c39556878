package engine

import (
	"context"

	"github.com/harvestd/harvest/engine/internal/update"
)

// UpdateRequest is one update of a run (internal/update).
type UpdateRequest = update.Request

// UpdateResult is an update's answer, or its acceptance when its handler
// did not answer within the wait (Completed false).
type UpdateResult = update.Result

// newUpdater makes the updater (internal/update): validation by a query,
// acceptance by a keyed signal, the answer read from the chain's history.
func (e *Engine) newUpdater() *update.Updater {
	return update.New(update.Deps{Pool: e.pool, Get: e.GetExecution, Query: e.Query, Signal: e.Signal,
		Poll: e.cfg.PollInterval})
}

// Update sends an update to a run and waits up to req.Wait for its
// handler's answer (internal/update): a retried update id gets the first
// answer, across continue-as-new, and is not validated again. Errors:
// harvest.ErrUnknownUpdate, harvest.ErrUpdateArgs, a
// *harvest.UpdateRejectedError, a *TerminalError, ErrNotFound.
func (e *Engine) Update(ctx context.Context, req UpdateRequest) (UpdateResult, error) {
	if err := e.fence.CheckOwning(); err != nil {
		return UpdateResult{}, err
	}
	return e.upd.Update(ctx, req)
}

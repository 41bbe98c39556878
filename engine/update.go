package engine

import (
	"context"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/update"
	"github.com/harvestd/harvest/engine/shardapi"
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

// UpdateWithStartRequest is an update-with-start: Start names the run
// (its workflow id is required), Update the update (its ExecutionID is
// the run the start answers).
type UpdateWithStartRequest struct {
	Start  StartRequest
	Update UpdateRequest
}

// UpdateWithStartResult is the start's answer and the update's.
type UpdateWithStartResult struct {
	Start  StartResult
	Update UpdateResult
}

// UpdateWithStart starts the run of req.Start's workflow id, or attaches
// to the running one, and sends it the update (design-notes, "Operating
// running workflows"). Nothing new is stored: the start is a keyed start
// under harvest.UpdateWithStartKeyPrefix + the update id, so a retry
// finds the same run through the key's claim, and the update's answer
// through its id. The start's reuse policy applies to a closed run
// holding the workflow id; a running one is attached to, unless the
// policy is terminate_if_running (replaced). A refused update leaves the
// run started.
func (e *Engine) UpdateWithStart(ctx context.Context, req UpdateWithStartRequest) (UpdateWithStartResult, error) {
	start := req.Start
	start.IdempotencyKey = harvest.UpdateWithStartKeyPrefix + req.Update.UpdateID
	start.ReusePolicy, start.ConflictPolicy = updateWithStartPolicies(start.ReusePolicy)
	started, err := e.StartWorkflow(ctx, start)
	if err != nil {
		return UpdateWithStartResult{}, err
	}
	upd := req.Update
	upd.ExecutionID = started.ExecutionID
	res, err := e.Update(ctx, upd)
	return UpdateWithStartResult{Start: started, Update: res}, err
}

// updateWithStartPolicies maps an update-with-start's reuse policy to a
// start's pair, as Temporal's (its conflict policy is "use existing"):
// allow_duplicate (the default) lets a closed run give way to a fresh
// one, terminate_if_running replaces a running one, and the others keep
// their meaning for closed runs.
func updateWithStartPolicies(reuse shardapi.ReusePolicy) (shardapi.ReusePolicy, shardapi.ConflictPolicy) {
	switch reuse {
	case shardapi.ReuseTerminateIfRunning:
		return reuse, shardapi.ConflictTerminateExisting
	case "", shardapi.ReuseAllowDuplicate:
		return shardapi.ReuseTerminateIfRunning, shardapi.ConflictUseExisting
	}
	return reuse, shardapi.ConflictUseExisting
}

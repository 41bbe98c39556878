package engine

import (
	"context"

	"github.com/harvestd/harvest/engine/internal/intake"
	"github.com/harvestd/harvest/engine/internal/runs"
	"github.com/harvestd/harvest/engine/shardapi"
)

// ResetRequest resets a run (shardapi.ResetRequest).
type ResetRequest = shardapi.ResetRequest

// ResetResult is a reset's new run (shardapi.ResetResult).
type ResetResult = shardapi.ResetResult

// The named reset points (internal/runs/reset.go).
const (
	ResetFirst    = runs.ResetFirst
	ResetLastTask = runs.ResetLastTask
)

// crashReset: a reset before its commit.
const crashReset = intake.CrashReset

// Reset replaces the current run of req.ExecutionID's chain by a new run
// that replays req.ExecutionID's history up to the point, then the
// signals it received after it, and runs on with the code as it is now
// (internal/intake/reset.go). The new run's keys are the replayed run's,
// so an activity re-executed after the point carries the key it had.
// A retry with the same idempotency key answers the first reset's run
// (Newly false). Errors: ErrNotFound, ErrInvalidArgument (not a point,
// a queued run, a system workflow's run), a *ConflictError when another
// run holds the workflow id.
func (e *Engine) Reset(ctx context.Context, req ResetRequest) (ResetResult, error) {
	return e.in.Reset(ctx, req)
}

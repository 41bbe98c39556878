package engine

import (
	"context"

	"github.com/google/uuid"

	"github.com/harvestd/harvest/engine/internal/maint"
)

// newMaint makes the maintenance services (internal/maint), each with
// the Deps it declares and a logger of its own.
func (e *Engine) newMaint() {
	e.timers = maint.NewTimers(e.service("timers"), e.bus.Timer)
	e.callbacks = maint.NewCallbacks(e.service("callbacks"), e.bus.Callback, e.cfg.CallbackPolicy, e.GetExecution)
	e.sweeper = maint.NewSweeper(e.service("sweeper"), e.cfg.SweepInterval, e.cfg.SweepBatch, e.cfg.IdempotencyWindow)
	e.analyzer = maint.NewAnalyzer(e.service("analyzer"))
}

// SweepStartClaims deletes start claims older than the idempotency window
// in batches of SweepBatch and returns how many it deleted.
func (e *Engine) SweepStartClaims(ctx context.Context) (int64, error) {
	return e.sweeper.StartClaims(ctx)
}

// SweepRedirects deletes up to SweepBatch placement redirects older than
// the idempotency window (catalog epochs older than the window are pruned
// too) and returns how many it deleted.
func (e *Engine) SweepRedirects(ctx context.Context) (int64, error) { return e.sweeper.Redirects(ctx) }

// SweepDeferred deletes, up to SweepBatch of each, the deferred items
// started or failed before the idempotency window and the pace rows of
// throttle keys idle as long, and returns how many items it deleted.
func (e *Engine) SweepDeferred(ctx context.Context) (int64, error) { return e.sweeper.Deferred(ctx) }

// CallbackKey is the Idempotency-Key header of every delivery attempt of
// completion callback idx of a run (maint.CallbackKey).
func CallbackKey(executionID uuid.UUID, idx int) string { return maint.CallbackKey(executionID, idx) }

package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/harvestd/harvest/engine/internal/fence"
	"github.com/harvestd/harvest/engine/internal/store"
)

// sweepLoop purges expired start claims every SweepInterval.
func (e *Engine) sweepLoop(ctx context.Context) {
	t := time.NewTicker(e.cfg.SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if n, err := e.SweepStartClaims(ctx); err != nil && ctx.Err() == nil {
			e.log.Warn().Err(err).Msg("start claim sweep failed")
		} else if n > 0 {
			e.log.Debug().Int64("deleted", n).Msg("expired start claims swept")
		}
		if _, err := e.SweepRedirects(ctx); err != nil && ctx.Err() == nil {
			e.log.Warn().Err(err).Msg("placement redirect sweep failed")
		}
		if _, err := e.SweepDeferred(ctx); err != nil && ctx.Err() == nil {
			e.log.Warn().Err(err).Msg("deferred start sweep failed")
		}
	}
}

// SweepStartClaims deletes start claims older than the idempotency window
// in batches of SweepBatch and returns how many it deleted.
func (e *Engine) SweepStartClaims(ctx context.Context) (int64, error) {
	var total int64
	for {
		n, err := e.sweepBatch(ctx, store.StartClaims)
		if err != nil {
			return total, fmt.Errorf("sweep start claims: %w", err)
		}
		total += n
		if n < int64(e.cfg.SweepBatch) {
			return total, nil
		}
	}
}

// sweepBatch deletes up to SweepBatch rows of table (store.StartClaims or
// store.PlacementRedirects) created before the idempotency window.
func (e *Engine) sweepBatch(ctx context.Context, table string) (int64, error) {
	var n int64
	err := e.withTx(ctx, func(tx *fence.Tx) (err error) {
		n, err = store.SweepCreatedBefore(ctx, tx, table, e.cfg.IdempotencyWindow, e.cfg.SweepBatch)
		return err
	})
	return n, err
}

// SweepDeferred deletes, up to SweepBatch of each, the deferred items
// started or failed before the idempotency window (their key no longer
// dedups: nothing is left to answer) and the pace rows of throttle keys
// idle as long, and returns how many items it deleted.
func (e *Engine) SweepDeferred(ctx context.Context) (int64, error) {
	var n int64
	window := e.now().Add(-e.cfg.IdempotencyWindow)
	err := e.withTx(ctx, func(tx *fence.Tx) (err error) {
		if n, err = store.SweepDeferredItems(ctx, tx, window, e.cfg.SweepBatch); err != nil {
			return fmt.Errorf("sweep deferred: %w", err)
		}
		if err := store.SweepThrottleKeys(ctx, tx, window, e.cfg.SweepBatch); err != nil {
			return fmt.Errorf("sweep throttle keys: %w", err)
		}
		return nil
	})
	return n, err
}

package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/harvestd/harvest/engine/internal/fence"
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
		n, err := e.sweepBatch(ctx, "harvest_start_idempotency")
		if err != nil {
			return total, fmt.Errorf("sweep start claims: %w", err)
		}
		total += n
		if n < int64(e.cfg.SweepBatch) {
			return total, nil
		}
	}
}

// sweepBatch deletes up to SweepBatch rows of table created before the
// idempotency window. table is one of the engine's own table names.
func (e *Engine) sweepBatch(ctx context.Context, table string) (int64, error) {
	var n int64
	err := e.withTx(ctx, func(tx *fence.Tx) error {
		tag, err := tx.Exec(ctx, `
			DELETE FROM `+table+`
			 WHERE ctid IN (SELECT ctid FROM `+table+`
			                 WHERE created_at < now() - $1 * interval '1 millisecond'
			                 LIMIT $2 FOR UPDATE SKIP LOCKED)`,
			e.cfg.IdempotencyWindow.Milliseconds(), e.cfg.SweepBatch)
		n = tag.RowsAffected()
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
	err := e.withTx(ctx, func(tx *fence.Tx) error {
		tag, err := tx.Exec(ctx, `
			DELETE FROM harvest_deferred WHERE deferred_id IN (
				SELECT deferred_id FROM harvest_deferred WHERE state IN ('started', 'failed') AND updated_at < $1
				 LIMIT $2 FOR UPDATE SKIP LOCKED)`, window, e.cfg.SweepBatch)
		if err != nil {
			return fmt.Errorf("sweep deferred: %w", err)
		}
		n = tag.RowsAffected()
		_, err = tx.Exec(ctx, `
			DELETE FROM harvest_deferred_throttle WHERE (workflow_name, throttle_key) IN (
				SELECT workflow_name, throttle_key FROM harvest_deferred_throttle WHERE next_at < $1
				 LIMIT $2 FOR UPDATE SKIP LOCKED)`, window, e.cfg.SweepBatch)
		if err != nil {
			return fmt.Errorf("sweep throttle keys: %w", err)
		}
		return nil
	})
	return n, err
}

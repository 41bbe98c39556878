package maint

import (
	"context"
	"fmt"
	"time"

	"github.com/harvestd/harvest/engine/internal/fence"
	"github.com/harvestd/harvest/engine/internal/store"
)

// Sweeper deletes, every Interval, what the idempotency window no longer
// needs: expired start claims, placement redirects, and finished deferred
// items with idle throttle keys; Batch rows at a time.
type Sweeper struct {
	d Deps
	// Interval is how often it sweeps; Batch the most rows one
	// statement deletes; Window the idempotency window.
	Interval time.Duration
	Batch    int
	Window   time.Duration
}

// Run sweeps every Interval until ctx ends; a failed sweep is logged.
func (s *Sweeper) Run(ctx context.Context) {
	t := time.NewTicker(s.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.sweep(ctx)
	}
}

// NewSweeper makes the sweeper.
func NewSweeper(d Deps, interval time.Duration, batch int, window time.Duration) *Sweeper {
	return &Sweeper{d: d, Interval: interval, Batch: batch, Window: window}
}

// sweep runs one pass of each sweep.
func (s *Sweeper) sweep(ctx context.Context) {
	if n, err := s.StartClaims(ctx); err != nil && ctx.Err() == nil {
		s.d.Log.Warn().Err(err).Msg("start claim sweep failed")
	} else if n > 0 {
		s.d.Log.Debug().Int64("deleted", n).Msg("expired start claims swept")
	}
	if _, err := s.Redirects(ctx); err != nil && ctx.Err() == nil {
		s.d.Log.Warn().Err(err).Msg("placement redirect sweep failed")
	}
	if _, err := s.Deferred(ctx); err != nil && ctx.Err() == nil {
		s.d.Log.Warn().Err(err).Msg("deferred start sweep failed")
	}
}

// StartClaims deletes start claims older than the idempotency window, in
// batches of Batch, and returns how many it deleted.
func (s *Sweeper) StartClaims(ctx context.Context) (int64, error) {
	var total int64
	for {
		n, err := s.batch(ctx, store.StartClaims)
		if err != nil {
			return total, fmt.Errorf("sweep start claims: %w", err)
		}
		total += n
		if n < int64(s.Batch) {
			return total, nil
		}
	}
}

// Redirects deletes up to Batch placement redirects older than the
// idempotency window (catalog epochs older than the window are pruned
// too) and returns how many it deleted.
func (s *Sweeper) Redirects(ctx context.Context) (int64, error) {
	n, err := s.batch(ctx, store.PlacementRedirects)
	if err != nil {
		return 0, fmt.Errorf("sweep placement redirects: %w", err)
	}
	return n, nil
}

// batch deletes up to Batch rows of table (store.StartClaims or
// store.PlacementRedirects) created before the idempotency window.
func (s *Sweeper) batch(ctx context.Context, table string) (int64, error) {
	var n int64
	err := s.d.Fence.Do(ctx, func(tx *fence.Tx) (err error) {
		n, err = store.SweepCreatedBefore(ctx, tx, table, s.Window, s.Batch)
		return err
	})
	return n, err
}

// Deferred deletes, up to Batch of each, the deferred items started or
// failed before the idempotency window (their key no longer dedups:
// nothing is left to answer) and the pace rows of throttle keys idle as
// long, and returns how many items it deleted.
func (s *Sweeper) Deferred(ctx context.Context) (int64, error) {
	var n int64
	window := s.d.Now().Add(-s.Window)
	err := s.d.Fence.Do(ctx, func(tx *fence.Tx) (err error) {
		if n, err = store.SweepDeferredItems(ctx, tx, window, s.Batch); err != nil {
			return fmt.Errorf("sweep deferred: %w", err)
		}
		if err := store.SweepThrottleKeys(ctx, tx, window, s.Batch); err != nil {
			return fmt.Errorf("sweep throttle keys: %w", err)
		}
		return nil
	})
	return n, err
}

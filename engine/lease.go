package engine

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest/engine/internal/fence"
)

// The shard lease and the fenced transactions are internal/fence's: these
// forwarders keep the engine's callers unchanged until they move into
// their own packages (docs/design-notes.md, "The engine in layers").

func (e *Engine) acquireLease(ctx context.Context) (int64, error) { return e.fence.Acquire(ctx) }

func (e *Engine) releaseLease(ctx context.Context) error { return e.fence.Release(ctx) }

func (e *Engine) renewLoop(ctx context.Context) { e.fence.Run(ctx) }

// withTx runs fn in a fenced transaction and commits it (fence.Fence.Do).
func (e *Engine) withTx(ctx context.Context, fn func(tx *fence.Tx) error) error {
	return e.fence.Do(ctx, fn)
}

// withFencedBatch sends the fence and queue's statements in one round
// trip, then runs fn and commits (fence.Fence.DoBatch).
func (e *Engine) withFencedBatch(ctx context.Context, queue func(b *pgx.Batch), fn func(tx *fence.Tx) error) error {
	return e.fence.DoBatch(ctx, queue, fn)
}

package intake

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest/engine/internal/fence"
	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
)

// placementLockClass is the first key of the two-key advisory lock on a
// routing key ("HVPL"); the second is hashtext of name and key. The
// two-key space never overlaps the one-key fence lock.
const placementLockClass int32 = 0x4856_504c

// queuePlacementCheck queues the routing key's placement lock and the read
// of its redirect; moved is set when a newer epoch claimed the key for
// another shard. It must be queued before any row the start writes, so
// that two holders never wait on each other.
func queuePlacementCheck(b *pgx.Batch, name string, p *shardapi.Placement, moved **shardapi.MovedError) {
	store.QueuePlacementLock(b, placementLockClass, name, p.RoutingKey)
	store.QueueRedirect(b, name, p.RoutingKey, func(epoch int64, shard int32) {
		if uint64(epoch) > p.Epoch {
			*moved = &shardapi.MovedError{Shard: uint16(shard), Epoch: uint64(epoch)}
		}
	})
}

// ClaimPlacement is the cross-shard half of a start whose key an earlier
// placement epoch put on this shard. Under the key's placement lock it
// returns the live claim or slot holder this shard has for the key, or
// records (or keeps) a redirect of the key to req.Target: from then on a
// start placed here under an older epoch is refused (shardapi.MovedError) instead
// of creating a second run. Starts on this shard take the same lock, so
// a claim and such a start are ordered: one sees the other.
func (in *Intake) ClaimPlacement(ctx context.Context, req shardapi.ClaimRequest) (shardapi.ClaimResult, error) {
	routing := req.WorkflowID
	if routing == "" {
		routing = req.IdempotencyKey
	}
	if req.WorkflowName == "" || routing == "" || req.Epoch == 0 {
		return shardapi.ClaimResult{}, fmt.Errorf("a placement claim needs a workflow name, a routing key and an epoch: %w", shardapi.ErrInvalidArgument)
	}
	var out shardapi.ClaimResult
	queue := func(b *pgx.Batch) { store.QueuePlacementLock(b, placementLockClass, req.WorkflowName, routing) }
	err := in.d.Fence.DoBatch(ctx, queue, func(tx *fence.Tx) error {
		out = shardapi.ClaimResult{}
		if req.IdempotencyKey != "" {
			res, err := lookupClaim(ctx, tx, req.WorkflowName, req.IdempotencyKey, in.d.Window.Milliseconds())
			if err == nil {
				out.Claim = &res
				return nil
			}
			if !errors.Is(err, shardapi.ErrNotFound) {
				return err
			}
		}
		if req.WorkflowID != "" {
			h, ok, err := store.LookupSlotHolder(ctx, tx, req.WorkflowName, req.WorkflowID)
			if err != nil || ok {
				out.Holder = &h
				return err
			}
		}
		moved, err := upsertRedirect(ctx, tx, req.WorkflowName, routing, req.Epoch, req.Target)
		out.Moved = moved
		return err
	})
	if err != nil {
		return shardapi.ClaimResult{}, err
	}
	return out, nil
}

// upsertRedirect records the key's redirect to target unless a newer
// epoch's redirect is there (returned as a shardapi.MovedError).
func upsertRedirect(ctx context.Context, tx *fence.Tx, name, routing string, epoch uint64, target uint16) (*shardapi.MovedError, error) {
	_, _, err := store.UpsertRedirect(ctx, tx, name, routing, int64(epoch), int32(target))
	if errors.Is(err, pgx.ErrNoRows) {
		// A newer epoch holds the key: read where it went.
		gotEpoch, gotShard, err := store.ReadRedirect(ctx, tx, name, routing)
		if err != nil {
			return nil, fmt.Errorf("read placement redirect: %w", store.Translate(err))
		}
		return &shardapi.MovedError{Shard: uint16(gotShard), Epoch: uint64(gotEpoch)}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("record placement redirect: %w", store.Translate(err))
	}
	return nil, nil
}

package outbox

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/harvestd/harvest/engine/internal/runs"
	"github.com/harvestd/harvest/engine/shardapi"
)

// Deps is what the outbox uses; the engine fills it. Its Fence's epoch
// stamps a claim; a retry's first backoff is a quarter of the poll tick,
// growing up to RetryMax.
type Deps struct {
	runs.Service
	// Outbound performs the keyed operations, on any shard.
	Outbound Outbound
	RetryMax time.Duration
}

// Outbound performs the outbox's keyed operations on runs of any shard:
// the engine's Outbound, its starts narrowed to what the outbox sets. A
// definite answer (success, or an error shardapi.IsDefinite accepts)
// ends a row; any other error is retried with backoff, with the same
// key. Resolve is the one read: the running run of a workflow id.
type Outbound interface {
	Start(ctx context.Context, req shardapi.OutboundStart) (shardapi.StartResult, error)
	Signal(ctx context.Context, req shardapi.SignalRequest) (shardapi.SignalResult, error)
	Cancel(ctx context.Context, id uuid.UUID, reason string) (shardapi.CloseResult, error)
	Terminate(ctx context.Context, id uuid.UUID, reason string) (shardapi.CloseResult, error)
	Resolve(ctx context.Context, workflowName, workflowID string) (uuid.UUID, error)
}

// ErrGone: an outbox row was recorded (and deleted) by another attempt
// meanwhile; this attempt has nothing left to do.
var ErrGone = errors.New("outbox row already recorded")

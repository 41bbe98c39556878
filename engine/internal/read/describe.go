package read

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
)

// Get reads one run.
func (r *Reader) Get(ctx context.Context, id uuid.UUID) (shardapi.Execution, error) {
	x, err := store.GetExecution(ctx, r.d.Pool, id)
	if err != nil {
		return shardapi.Execution{}, fmt.Errorf("execution %s: %w", id, store.Translate(err))
	}
	return x, nil
}

// Describe returns a run with its pending work and first history events.
func (r *Reader) Describe(ctx context.Context, id uuid.UUID) (shardapi.Description, error) {
	x, err := r.Get(ctx, id)
	if err != nil {
		return shardapi.Description{}, err
	}
	d := shardapi.Description{Execution: x}
	if d.PendingActivities, err = r.pendingActivities(ctx, id); err != nil {
		return shardapi.Description{}, err
	}
	if d.PendingTimers, err = r.pendingTimers(ctx, id); err != nil {
		return shardapi.Description{}, err
	}
	more := false
	if d.History, more, err = r.historyPage(ctx, id, shardapi.HistoryQuery{After: -1, Limit: shardapi.DescribeHistoryLimit}); err != nil {
		return shardapi.Description{}, err
	}
	d.HistoryTruncated = more
	if d.CancelRequestedAt, err = r.cancelRequestedAt(ctx, id); err != nil {
		return shardapi.Description{}, err
	}
	if d.Children, err = r.childrenOf(ctx, id); err != nil {
		return shardapi.Description{}, err
	}
	return d, nil
}

// cancelRequestedAt is the time of a run's WorkflowCancelRequested event.
func (r *Reader) cancelRequestedAt(ctx context.Context, id uuid.UUID) (*time.Time, error) {
	at, err := store.CancelRequestedAt(ctx, r.d.Pool, id)
	if err != nil {
		return nil, fmt.Errorf("cancel request of %s: %w", id, err)
	}
	return at, nil
}

func (r *Reader) pendingActivities(ctx context.Context, id uuid.UUID) ([]shardapi.PendingActivity, error) {
	acts, err := store.PendingActivities(ctx, r.d.Pool, id)
	if err != nil {
		return nil, fmt.Errorf("pending activities of %s: %w", id, err)
	}
	return acts, nil
}

func (r *Reader) pendingTimers(ctx context.Context, id uuid.UUID) ([]shardapi.PendingTimer, error) {
	timers, err := store.PendingTimers(ctx, r.d.Pool, id)
	if err != nil {
		return nil, fmt.Errorf("pending timers of %s: %w", id, err)
	}
	return timers, nil
}

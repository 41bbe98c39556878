package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/harvestd/harvest/engine/internal/store"
)

// checkStarted refuses a started range that holds no instant.
func checkStarted(q ListQuery) error {
	if !q.StartedAfter.IsZero() && !q.StartedBefore.IsZero() && !q.StartedAfter.Before(q.StartedBefore) {
		return fmt.Errorf("started_after %s is not before started_before %s: %w",
			q.StartedAfter.Format(time.RFC3339Nano), q.StartedBefore.Format(time.RFC3339Nano), ErrInvalidArgument)
	}
	return nil
}

// startedBounds are q's started range as query arguments (nil: unbounded).
func startedBounds(q ListQuery) (after, before *time.Time) {
	if !q.StartedAfter.IsZero() {
		after = &q.StartedAfter
	}
	if !q.StartedBefore.IsZero() {
		before = &q.StartedBefore
	}
	return after, before
}

// countByState counts the runs of q's name, id and started filters by
// state in one grouped read (the state_list index holds every column it
// needs when no name or id is given). Every state is present, 0 if none.
func (e *Engine) countByState(ctx context.Context, q ListQuery) (map[string]int64, error) {
	after, before := startedBounds(q)
	counts := make(map[string]int64, len(listStates))
	for _, s := range listStates {
		counts[s] = 0
	}
	err := store.CountByState(ctx, e.pool, q.WorkflowName, q.WorkflowID, after, before, func(state string, n int64) { counts[state] = n })
	if err != nil {
		return nil, fmt.Errorf("count executions: %w", err)
	}
	return counts, nil
}

// listStates are the states a run can be listed and counted in.
var listStates = []string{StateRunning, StateCompleted, StateFailed, StateCancelled, StateTimedOut, StateTerminated, StateContinuedAsNew}

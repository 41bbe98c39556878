package engine

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// TestListStartedRangeAndCounts lists by a started range, pages through it
// by keyset, and counts by state under the same filters.
func TestListStartedRangeAndCounts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e := b.engine(t)
	inputs := []string{"complete", "wait", "complete", "wait", "wait"}
	for _, in := range inputs {
		res := start(t, e, StartRequest{WorkflowName: "block", Input: raw(t, in)})
		if in == "complete" {
			waitClosed(t, e, res.ExecutionID)
		}
	}
	all, err := e.List(context.Background(), ListQuery{Ascending: true})
	require.NoError(t, err)
	require.Len(t, all.Workflows, len(inputs))
	pivot := all.Workflows[2].CreatedAt
	ids := func(xs []Execution) []uuid.UUID {
		out := make([]uuid.UUID, len(xs))
		for i, x := range xs {
			out[i] = x.ExecutionID
		}
		return out
	}

	t.Run("AfterIsInclusive", func(t *testing.T) {
		p, err := e.List(context.Background(), ListQuery{Ascending: true, StartedAfter: pivot})
		require.NoError(t, err)
		require.Equal(t, ids(all.Workflows[2:]), ids(p.Workflows))
	})
	t.Run("BeforeIsExclusive", func(t *testing.T) {
		p, err := e.List(context.Background(), ListQuery{Ascending: true, StartedBefore: pivot})
		require.NoError(t, err)
		require.Equal(t, ids(all.Workflows[:2]), ids(p.Workflows))
	})
	t.Run("KeysetPagesInsideTheRange", func(t *testing.T) {
		q := ListQuery{PageSize: 2, StartedAfter: all.Workflows[1].CreatedAt, StartedBefore: all.Workflows[4].CreatedAt}
		first, err := e.List(context.Background(), q)
		require.NoError(t, err)
		require.NotEmpty(t, first.NextCursor)
		q.Cursor = first.NextCursor
		second, err := e.List(context.Background(), q)
		require.NoError(t, err)
		require.Empty(t, second.NextCursor)
		got := append(ids(first.Workflows), ids(second.Workflows)...)
		want := ids(all.Workflows[1:4])
		require.Equal(t, []uuid.UUID{want[2], want[1], want[0]}, got, "newest first, each run once")
	})
	t.Run("CountsByStateUnderTheFilters", func(t *testing.T) {
		p, err := e.List(context.Background(), ListQuery{StartedAfter: pivot, States: []string{StateCompleted}, Counts: true})
		require.NoError(t, err)
		require.Len(t, p.Workflows, 1)
		require.Equal(t, int64(2), p.Counts[StateRunning], "counts set the state filter aside")
		require.Equal(t, int64(1), p.Counts[StateCompleted])
		require.Equal(t, int64(0), p.Counts[StateFailed], "every state is present")
		whole, err := e.List(context.Background(), ListQuery{Counts: true, WorkflowName: "block"})
		require.NoError(t, err)
		require.Equal(t, map[string]int64{StateQueued: 0, StateRunning: 3, StateCompleted: 2, StateFailed: 0, StateCancelled: 0, StateTimedOut: 0,
			StateTerminated: 0, StateContinuedAsNew: 0}, whole.Counts)
		none, err := e.List(context.Background(), ListQuery{Counts: true, WorkflowName: "nope"})
		require.NoError(t, err)
		require.Zero(t, none.Counts[StateRunning])
		plain, err := e.List(context.Background(), ListQuery{})
		require.NoError(t, err)
		require.Nil(t, plain.Counts, "counts only when asked")
	})
	t.Run("EmptyRangeRefused", func(t *testing.T) {
		_, err := e.List(context.Background(), ListQuery{StartedAfter: pivot, StartedBefore: pivot})
		require.ErrorIs(t, err, ErrInvalidArgument)
		_, err = e.List(context.Background(), ListQuery{StartedAfter: pivot.Add(time.Second), StartedBefore: pivot})
		require.ErrorIs(t, err, ErrInvalidArgument)
	})
}

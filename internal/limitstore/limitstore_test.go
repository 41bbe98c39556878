package limitstore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/flowlimit"
	"github.com/harvestd/harvest/internal/limitstore"
	"github.com/harvestd/harvest/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestStore(t *testing.T) {
	ctx := context.Background()
	wf := flowlimit.Limit{Kind: flowlimit.Workflow, Name: "report", MaxRunning: 2, KeyPointer: "/customer"}
	act := flowlimit.Limit{Kind: flowlimit.Activity, Name: "report", MaxRunning: 1, PerSecond: 5, Burst: 2}
	setup := func(t *testing.T) (*limitstore.Store, func() *limitstore.Store) {
		t.Helper()
		pool := pgtest.NewPool(t)
		s, err := limitstore.Load(ctx, pool)
		require.NoError(t, err)
		require.Empty(t, s.Current().Limits)
		for _, l := range []flowlimit.Limit{wf, act} {
			_, err = s.SetLimit(ctx, l)
			require.NoError(t, err)
		}
		reload := func() *limitstore.Store {
			s, err := limitstore.Load(ctx, pool)
			require.NoError(t, err)
			return s
		}
		return s, reload
	}
	t.Run("SetIsKeptAcrossLoads", func(t *testing.T) {
		s, reload := setup(t)
		cur := s.Current()
		require.Equal(t, uint64(2), cur.Version)
		require.True(t, cur.Limits["workflow/report"].Same(wf))
		require.False(t, cur.Limits["workflow/report"].UpdatedAt.IsZero())
		list, err := reload().Limits(ctx)
		require.NoError(t, err)
		require.Len(t, list, 2)
		require.True(t, list[0].Same(act), "sorted: activities first")
		require.True(t, list[1].Same(wf))
	})
	t.Run("SetAgainChangesNothingOtherReplaces", func(t *testing.T) {
		s, reload := setup(t)
		before := s.Current()
		got, err := s.SetLimit(ctx, wf)
		require.NoError(t, err)
		require.Equal(t, before.Limits["workflow/report"], got)
		require.Same(t, before, s.Current(), "no new version")

		lift := flowlimit.Limit{Kind: flowlimit.Workflow, Name: "report"}
		_, err = s.SetLimit(ctx, lift)
		require.NoError(t, err)
		require.True(t, s.Current().Limits["workflow/report"].Same(lift))
		require.True(t, before.Limits["workflow/report"].Same(wf), "an earlier snapshot is not changed")
		require.True(t, reload().Current().Limits["workflow/report"].Same(lift))
	})
	t.Run("Invalid", func(t *testing.T) {
		s, reload := setup(t)
		for _, bad := range []flowlimit.Limit{
			{Kind: "shard", Name: "x"},
			{Kind: flowlimit.Workflow, Name: "x\x00"},
			{Kind: flowlimit.Workflow, Name: "report", MaxRunning: -1},
			{Kind: flowlimit.Workflow, Name: "report", PerSecond: 1},
		} {
			_, err := s.SetLimit(ctx, bad)
			require.ErrorIs(t, err, flowlimit.ErrInvalid, "%+v", bad)
		}
		require.True(t, reload().Current().Limits["workflow/report"].Same(wf))
	})
	t.Run("Delete", func(t *testing.T) {
		s, reload := setup(t)
		require.NoError(t, s.DeleteLimit(ctx, flowlimit.Workflow, "report"))
		require.NotContains(t, s.Current().Limits, "workflow/report")
		require.Contains(t, s.Current().Limits, "activity/report")
		require.ErrorIs(t, s.DeleteLimit(ctx, flowlimit.Workflow, "report"), flowlimit.ErrUnknown)
		list, err := reload().Limits(ctx)
		require.NoError(t, err)
		require.Len(t, list, 1)
		require.Equal(t, flowlimit.Activity, list[0].Kind)
	})
}

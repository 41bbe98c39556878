package activitystore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/httpactivity"
	"github.com/harvestd/harvest/internal/activitystore"
	"github.com/harvestd/harvest/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestStore(t *testing.T) {
	ctx := context.Background()
	act := httpactivity.Config{Name: "charge", URL: "https://pay.example.com/charge",
		Headers: map[string]string{"Authorization": "Bearer sk_x"}, Timeout: 30 * time.Second,
		Retry: &httpactivity.Retry{MaxAttempts: 4}}
	setup := func(t *testing.T) (*activitystore.Store, func() *activitystore.Store) {
		t.Helper()
		pool := pgtest.NewPool(t)
		s, err := activitystore.Load(ctx, pool)
		require.NoError(t, err)
		_, err = s.CreateHTTPActivity(ctx, act)
		require.NoError(t, err)
		reload := func() *activitystore.Store {
			s, err := activitystore.Load(ctx, pool)
			require.NoError(t, err)
			return s
		}
		return s, reload
	}
	t.Run("CreateIsKeptAcrossLoads", func(t *testing.T) {
		s, reload := setup(t)
		got, ok := s.HTTPActivity("charge")
		require.True(t, ok)
		require.True(t, got.Same(act))
		require.False(t, got.CreatedAt.IsZero())
		again, ok := reload().HTTPActivity("charge")
		require.True(t, ok)
		require.True(t, again.Same(act), "the database keeps it, headers and retry included")
	})
	t.Run("SameAgainChangesNothingOtherIsRefused", func(t *testing.T) {
		s, _ := setup(t)
		_, err := s.CreateHTTPActivity(ctx, act.Clone())
		require.NoError(t, err)
		other := act.Clone()
		other.URL = "https://pay.example.com/other"
		_, err = s.CreateHTTPActivity(ctx, other)
		require.ErrorIs(t, err, httpactivity.ErrExists)
		got, _ := s.HTTPActivity("charge")
		require.Equal(t, act.URL, got.URL)
	})
	t.Run("Invalid", func(t *testing.T) {
		s, _ := setup(t)
		_, err := s.CreateHTTPActivity(ctx, httpactivity.Config{Name: "x"})
		require.ErrorIs(t, err, httpactivity.ErrInvalidConfig)
	})
	t.Run("Delete", func(t *testing.T) {
		s, reload := setup(t)
		require.NoError(t, s.DeleteHTTPActivity(ctx, "charge"))
		_, ok := s.HTTPActivity("charge")
		require.False(t, ok)
		require.ErrorIs(t, s.DeleteHTTPActivity(ctx, "charge"), httpactivity.ErrUnknown)
		list, err := reload().HTTPActivities(ctx)
		require.NoError(t, err)
		require.Empty(t, list)
	})
}

package harvest

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRateLimitRegistration(t *testing.T) {
	t.Parallel()
	act := func(*ActivityContext, string) (string, error) { return "", nil }
	t.Run("RateLimitedActivitiesListsTheirLimits", func(t *testing.T) {
		t.Parallel()
		r := NewRegistry()
		require.NoError(t, r.Register(NewActivity("plain", act), NewActivity("paced", act).WithRateLimit(RateLimit{PerSecond: 50, KeyPointer: "/p"})))
		require.True(t, r.HasActivityLimits())
		require.Equal(t, map[string]RateLimit{"paced": {PerSecond: 50, KeyPointer: "/p"}}, r.RateLimitedActivities())
		require.Empty(t, r.LimitedActivities(), "a rate limit is no concurrency limit")
		require.Equal(t, 1, RateLimit{PerSecond: 1}.BurstOrDefault())
		require.Equal(t, 5, RateLimit{PerSecond: 1, Burst: 5}.BurstOrDefault())
	})
	for _, c := range []struct {
		name string
		lim  RateLimit
	}{
		{"NegativeRate", RateLimit{PerSecond: -1}},
		{"NaNRate", RateLimit{PerSecond: math.NaN()}},
		{"InfiniteRate", RateLimit{PerSecond: math.Inf(1)}},
		{"HugeRate", RateLimit{PerSecond: MaxPerSecond + 1}},
		{"TinyRate", RateLimit{PerSecond: 5e-324}},
		{"NegativeBurst", RateLimit{PerSecond: 1, Burst: -1}},
		{"BadPointer", RateLimit{PerSecond: 1, KeyPointer: "p"}},
	} {
		t.Run("Refused"+c.name, func(t *testing.T) {
			t.Parallel()
			require.Error(t, NewRegistry().Register(NewActivity("a", act).WithRateLimit(c.lim)))
		})
	}
}

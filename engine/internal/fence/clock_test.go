package fence

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDBClock(t *testing.T) {
	t.Parallel()
	base := time.Now()
	observe := func(c *Clock, offsets ...time.Duration) {
		for _, d := range offsets {
			c.Observe(base, base.Add(d))
		}
	}
	// offset reads the clock's estimate back as an offset to the node's
	// clock, to 10 ms (a busy machine may pause between the two reads).
	offset := func(c *Clock) (time.Duration, bool) {
		before := time.Now()
		at, ok := c.At(0)
		return at.Sub(before).Round(10 * time.Millisecond), ok
	}
	t.Run("NothingBeforeASample", func(t *testing.T) {
		var c Clock
		_, ok := c.At(0)
		require.False(t, ok)
	})
	t.Run("TheLeastSampleWins", func(t *testing.T) {
		var c Clock
		observe(&c, 5*time.Second, 3*time.Second, 4*time.Second)
		d, ok := offset(&c)
		require.True(t, ok)
		require.Equal(t, 3*time.Second, d)
	})
	t.Run("LeadIsSubtractedAndMicrosecondsKept", func(t *testing.T) {
		var c Clock
		observe(&c, 0)
		at, ok := c.At(time.Hour)
		require.True(t, ok)
		require.Equal(t, -time.Hour, time.Until(at).Round(time.Minute))
		require.Zero(t, at.Nanosecond()%1000)
		require.Equal(t, at, at.Round(0), "no monotonic reading")
	})
	t.Run("AStepBackIsFollowedAtOnce", func(t *testing.T) {
		var c Clock
		observe(&c, 10*time.Second)
		observe(&c, -10*time.Second)
		d, _ := offset(&c)
		require.Equal(t, -10*time.Second, d)
	})
	t.Run("AStepForwardIsFollowedWithinTwoWindows", func(t *testing.T) {
		var c Clock
		observe(&c, 0)
		for range 2*clockWindow - 2 {
			observe(&c, time.Minute)
		}
		d, _ := offset(&c)
		require.Equal(t, time.Duration(0), d, "the old sample's window is the previous one")
		observe(&c, time.Minute)
		d, _ = offset(&c)
		require.Equal(t, time.Minute, d)
	})
}

package intake

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/harvestd/harvest/engine/shardapi"
	"github.com/stretchr/testify/require"
)

func TestClaimCache(t *testing.T) {
	t.Parallel()
	now := time.Now()
	open := func(shardapi.StartResult) bool { return true }
	closed := func(shardapi.StartResult) bool { return false }
	res := func(state string) shardapi.StartResult {
		return shardapi.StartResult{ExecutionID: uuid.New(), WorkflowName: "w", WorkflowID: "id", State: state, StartedFresh: true}
	}

	cases := []struct {
		name  string
		state string
		left  time.Duration
		at    time.Duration // after now
		open  func(shardapi.StartResult) bool
		hit   bool
	}{
		{"TerminalIsAnswered", shardapi.StateCompleted, time.Hour, time.Minute, closed, true},
		{"RunningKnownOpenIsAnswered", shardapi.StateRunning, time.Hour, time.Minute, open, true},
		{"RunningNotKnownOpenIsRead", shardapi.StateRunning, time.Hour, time.Minute, closed, false},
		{"UnknownStateIsNotCached", "", time.Hour, 0, open, false},
		{"NoTimeLeftIsNotCached", shardapi.StateCompleted, 0, 0, open, false},
		{"StopsBeforeTheClaimExpires", shardapi.StateCompleted, 64 * time.Second, 63 * time.Second, open, false},
		{"UsedUpToThen", shardapi.StateCompleted, 64 * time.Second, 62 * time.Second, open, true},
		{"RunningAnswersForAtMostRunningFor", shardapi.StateRunning, time.Hour, 11 * time.Minute, open, false},
		{"TerminalOutlivesRunningFor", shardapi.StateCompleted, time.Hour, 11 * time.Minute, closed, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newClaimCache(8, 10*time.Minute)
			r := res(tc.state)
			c.put(c.generation(), "k", r, now, tc.left)
			got, ok := c.get("w", "k", now.Add(tc.at), tc.open)
			require.Equal(t, tc.hit, ok)
			if tc.hit {
				require.Equal(t, r.ExecutionID, got.ExecutionID)
				require.True(t, got.Deduplicated, "a cached answer is a replay")
				require.False(t, got.StartedFresh)
			}
			_, ok = c.get("other", "k", now, tc.open)
			require.False(t, ok, "keys are per workflow name")
		})
	}

	t.Run("ForgetDropsEntriesAndEarlierReads", func(t *testing.T) {
		t.Parallel()
		c := newClaimCache(8, 10*time.Minute)
		before := c.generation()
		c.put(before, "a", res(shardapi.StateCompleted), now, time.Hour)
		c.forget()
		_, ok := c.get("w", "a", now, open)
		require.False(t, ok, "forget drops what was cached")
		c.put(before, "b", res(shardapi.StateCompleted), now, time.Hour)
		_, ok = c.get("w", "b", now, open)
		require.False(t, ok, "an answer read before a forget is not cached after it")
		c.put(c.generation(), "b", res(shardapi.StateCompleted), now, time.Hour)
		_, ok = c.get("w", "b", now, open)
		require.True(t, ok)
	})

	t.Run("BoundedByTwoGenerations", func(t *testing.T) {
		t.Parallel()
		c := newClaimCache(2, 10*time.Minute)
		for _, k := range []string{"a", "b", "c", "d", "e"} {
			c.put(c.generation(), k, res(shardapi.StateCompleted), now, time.Hour)
		}
		for k, want := range map[string]bool{"a": false, "b": false, "c": true, "d": true, "e": true} {
			_, ok := c.get("w", k, now, open)
			require.Equal(t, want, ok, "key %s", k)
		}
	})
}

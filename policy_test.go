package harvest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestStoredOptions: Stored is what the options read back as from
// history, so that a task dispatched from the value an engine holds runs
// with the timeouts a claim of its stored row would.
func TestStoredOptions(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		opts ActivityOptions
	}{
		{"Zero", ActivityOptions{}},
		{"WholeMilliseconds", ActivityOptions{StartToClose: 30 * time.Second, ScheduleToClose: time.Minute, Queue: "q"}},
		{"SubMillisecond", ActivityOptions{StartToClose: 1500 * time.Microsecond, HeartbeatTimeout: 999 * time.Microsecond}},
		{"Retry", ActivityOptions{StartToClose: time.Second, Retry: &RetryPolicy{MaxAttempts: 3,
			InitialInterval: 100*time.Millisecond + 7*time.Nanosecond, BackoffCoefficient: 2, MaxInterval: time.Second,
			NonRetryableErrors: []string{"Fatal"}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			raw, err := json.Marshal(c.opts)
			require.NoError(t, err)
			var back ActivityOptions
			require.NoError(t, json.Unmarshal(raw, &back))
			require.Equal(t, back, c.opts.Stored())
		})
	}

	t.Run("RetryPolicyIsACopy", func(t *testing.T) {
		o := ActivityOptions{Retry: &RetryPolicy{NonRetryableErrors: []string{"A"}}}
		s := o.Stored()
		o.Retry.NonRetryableErrors[0] = "B"
		require.Equal(t, []string{"A"}, s.Retry.NonRetryableErrors)
	})
}

// TestSubMillisecondBounds: history keeps whole milliseconds, so a
// positive bound under one is raised to one instead of being stored as 0.
func TestSubMillisecondBounds(t *testing.T) {
	t.Parallel()
	o := ActivityOptions{StartToClose: 500 * time.Microsecond, ScheduleToClose: time.Nanosecond,
		HeartbeatTimeout: 999 * time.Microsecond}.WithDefaults().Stored()
	require.Equal(t, time.Millisecond, o.StartToClose)
	require.Equal(t, time.Millisecond, o.ScheduleToClose)
	require.Equal(t, time.Millisecond, o.HeartbeatTimeout)

	unset := ActivityOptions{}.WithDefaults()
	require.Equal(t, DefaultStartToClose, unset.StartToClose)
	require.Zero(t, unset.ScheduleToClose, "no bound stays no bound")
	require.Zero(t, unset.HeartbeatTimeout)
}

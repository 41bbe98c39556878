package client_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/client"
	"github.com/harvestd/harvest/demo"
)

func TestServerSchedules(t *testing.T) {
	t.Parallel()
	b := setupServer(t)
	req := client.ScheduleRequest{ID: "chain", WorkflowName: demo.NoopChainName, Input: map[string]int{"activities": 1},
		Interval: client.Duration(time.Hour), Jitter: client.Duration(time.Second), Overlap: client.OverlapAllowAll}

	t.Run("create and list", func(t *testing.T) {
		s, err := b.api.CreateSchedule(ctxT(t), req)
		require.NoError(t, err)
		require.Equal(t, "1h0m0s", s.Interval)
		require.Equal(t, "1s", s.Jitter)
		require.Len(t, s.NextFires, 5)
		require.Equal(t, time.Hour, s.NextFires[1].Sub(s.NextFires[0]))
		_, err = b.api.CreateSchedule(ctxT(t), req)
		require.ErrorIs(t, err, client.ErrConflict)
		list, err := b.api.Schedules(ctxT(t))
		require.NoError(t, err)
		require.Len(t, list, 1)
		require.Equal(t, "chain", list[0].ID)
		require.NotEmpty(t, list[0].Raw)
	})
	t.Run("trigger and describe", func(t *testing.T) {
		fire, err := b.api.TriggerSchedule(ctxT(t), "chain")
		require.NoError(t, err)
		require.Equal(t, "pending", fire.Outcome)
		var s *client.Schedule
		require.Eventually(t, func() bool {
			s, err = b.api.DescribeSchedule(ctxT(t), "chain")
			return err == nil && len(s.RecentFires) == 1 && s.RecentFires[0].Outcome == "started"
		}, 20*time.Second, 20*time.Millisecond)
		require.Equal(t, fire.Key, s.RecentFires[0].Key)
		res, closed, err := b.api.Result(ctxT(t), s.RecentFires[0].ExecutionID, 20*time.Second)
		require.NoError(t, err)
		require.True(t, closed)
		require.Equal(t, "COMPLETED", res.State)
	})
	t.Run("a keyed trigger repeated fires once", func(t *testing.T) {
		first, dup, err := b.api.TriggerScheduleKeyed(ctxT(t), "chain", "release-1")
		require.NoError(t, err)
		require.False(t, dup)
		again, dup, err := b.api.TriggerScheduleKeyed(ctxT(t), "chain", "release-1")
		require.NoError(t, err)
		require.True(t, dup)
		require.Equal(t, first.Key, again.Key)
		require.Eventually(t, func() bool {
			s, err := b.api.DescribeSchedule(ctxT(t), "chain")
			return err == nil && len(s.RecentFires) == 2 && s.RecentFires[0].Outcome == "started"
		}, 20*time.Second, 20*time.Millisecond, "the keyed trigger is one fire beside the first test's")
	})
	t.Run("pause, resume, delete", func(t *testing.T) {
		s, err := b.api.PauseSchedule(ctxT(t), "chain")
		require.NoError(t, err)
		require.True(t, s.Paused)
		s, err = b.api.ResumeSchedule(ctxT(t), "chain")
		require.NoError(t, err)
		require.False(t, s.Paused)
		require.NoError(t, b.api.DeleteSchedule(ctxT(t), "chain"))
		_, err = b.api.DescribeSchedule(ctxT(t), "chain")
		require.ErrorIs(t, err, client.ErrNotFound)
		require.True(t, errors.Is(b.api.DeleteSchedule(ctxT(t), ""), client.ErrInvalid))
	})
	t.Run("a bad cron is invalid", func(t *testing.T) {
		_, err := b.api.CreateSchedule(ctxT(t), client.ScheduleRequest{ID: "bad", WorkflowName: demo.NoopChainName, Cron: "not a cron"})
		require.ErrorIs(t, err, client.ErrInvalid)
	})
}

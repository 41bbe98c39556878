package schedule

import (
	"testing"
	"time"

	"github.com/harvestd/harvest/engine/shardapi"
	"github.com/stretchr/testify/require"
)

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

func TestScheduleNominalTimes(t *testing.T) {
	t.Parallel()
	end := utc("2026-01-01T03:00:00Z")
	cases := []struct {
		name  string
		spec  shardapi.ScheduleSpec
		after string
		want  []string
	}{
		{"cron every 15 minutes in UTC", shardapi.ScheduleSpec{Cron: "*/15 * * * *"}, "2026-01-01T00:07:00Z",
			[]string{"2026-01-01T00:15:00Z", "2026-01-01T00:30:00Z", "2026-01-01T00:45:00Z"}},
		{"cron on a nominal time is strictly after it", shardapi.ScheduleSpec{Cron: "0 * * * *"}, "2026-01-01T01:00:00Z",
			[]string{"2026-01-01T02:00:00Z", "2026-01-01T03:00:00Z"}},
		{"cron daily in a zone", shardapi.ScheduleSpec{Cron: "30 9 * * *", TimeZone: "Asia/Tokyo"}, "2026-01-01T00:00:00Z",
			[]string{"2026-01-01T00:30:00Z", "2026-01-02T00:30:00Z"}},
		// New York springs forward on 8 March 2026 at 02:00 EST (07:00Z):
		// 02:30 does not exist that day, so it does not fire; the days
		// around it fire at 02:30 local, 07:30Z before and 06:30Z after.
		{"cron across spring forward", shardapi.ScheduleSpec{Cron: "30 2 * * *", TimeZone: "America/New_York"}, "2026-03-07T00:00:00Z",
			[]string{"2026-03-07T07:30:00Z", "2026-03-09T06:30:00Z", "2026-03-10T06:30:00Z"}},
		// Hourly at :30 keeps one fire per real hour across spring forward.
		{"hourly across spring forward", shardapi.ScheduleSpec{Cron: "30 * * * *", TimeZone: "America/New_York"}, "2026-03-08T05:00:00Z",
			[]string{"2026-03-08T05:30:00Z", "2026-03-08T06:30:00Z", "2026-03-08T07:30:00Z", "2026-03-08T08:30:00Z"}},
		// It falls back on 1 November 2026 at 02:00 EDT (06:00Z): 01:30
		// local happens twice, at 05:30Z and at 06:30Z. Each instant is
		// its own nominal time, named apart in UTC.
		{"cron across fall back", shardapi.ScheduleSpec{Cron: "30 1 * * *", TimeZone: "America/New_York"}, "2026-11-01T00:00:00Z",
			[]string{"2026-11-01T05:30:00Z", "2026-11-01T06:30:00Z", "2026-11-02T06:30:00Z"}},
		{"hourly across fall back", shardapi.ScheduleSpec{Cron: "30 * * * *", TimeZone: "America/New_York"}, "2026-11-01T04:00:00Z",
			[]string{"2026-11-01T04:30:00Z", "2026-11-01T05:30:00Z", "2026-11-01T06:30:00Z", "2026-11-01T07:30:00Z"}},
		{"interval from the epoch", shardapi.ScheduleSpec{Interval: 10 * time.Minute}, "2026-01-01T00:07:00Z",
			[]string{"2026-01-01T00:10:00Z", "2026-01-01T00:20:00Z"}},
		{"interval with an offset", shardapi.ScheduleSpec{Interval: time.Hour, Offset: 5 * time.Minute}, "2026-01-01T00:05:00Z",
			[]string{"2026-01-01T01:05:00Z", "2026-01-01T02:05:00Z"}},
		{"interval before the epoch", shardapi.ScheduleSpec{Interval: time.Hour}, "1969-12-31T22:30:00Z",
			[]string{"1969-12-31T23:00:00Z", "1970-01-01T00:00:00Z"}},
		{"an end stops the fires", shardapi.ScheduleSpec{Interval: time.Hour, EndAt: &end}, "2026-01-01T00:30:00Z",
			[]string{"2026-01-01T01:00:00Z", "2026-01-01T02:00:00Z", "2026-01-01T03:00:00Z"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			clock, err := newScheduleClock(c.spec)
			require.NoError(t, err)
			var want []time.Time
			for _, w := range c.want {
				want = append(want, utc(w))
			}
			got := clock.upcoming(utc(c.after), len(want)+1)
			if c.spec.EndAt == nil {
				got = got[:len(want)]
			}
			require.Equal(t, want, got)
		})
	}
}

func TestScheduleSpecRefused(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		spec shardapi.ScheduleSpec
	}{
		{"no cron and no interval", shardapi.ScheduleSpec{}},
		{"both cron and interval", shardapi.ScheduleSpec{Cron: "* * * * *", Interval: time.Minute}},
		{"a bad cron", shardapi.ScheduleSpec{Cron: "61 * * * *"}},
		{"six fields", shardapi.ScheduleSpec{Cron: "0 0 * * * *"}},
		{"@every", shardapi.ScheduleSpec{Cron: "@every 5m"}},
		{"a cron that never fires", shardapi.ScheduleSpec{Cron: "0 0 30 2 *"}},
		{"an unknown zone", shardapi.ScheduleSpec{Cron: "* * * * *", TimeZone: "Mars/Olympus"}},
		{"the local zone", shardapi.ScheduleSpec{Cron: "* * * * *", TimeZone: "Local"}},
		{"a zone without a cron", shardapi.ScheduleSpec{Interval: time.Minute, TimeZone: "UTC"}},
		{"an interval below a second", shardapi.ScheduleSpec{Interval: time.Millisecond}},
		{"a huge interval", shardapi.ScheduleSpec{Interval: 1 << 62}},
		{"a negative interval", shardapi.ScheduleSpec{Interval: -time.Minute}},
		{"an offset as long as the interval", shardapi.ScheduleSpec{Interval: time.Minute, Offset: time.Minute}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := newScheduleClock(c.spec)
			require.ErrorIs(t, err, shardapi.ErrInvalidArgument)
		})
	}
}

func TestFireJitter(t *testing.T) {
	t.Parallel()
	n := utc("2026-01-01T00:00:00Z")
	t.Run("the same fire gets the same jitter", func(t *testing.T) {
		require.Equal(t, fireJitter("a", 1, n, time.Minute), fireJitter("a", 1, n, time.Minute))
	})
	t.Run("jitter stays below its bound and varies", func(t *testing.T) {
		seen := map[time.Duration]bool{}
		for i := range 50 {
			j := fireJitter("a", 1, n.Add(time.Duration(i)*time.Hour), time.Minute)
			require.GreaterOrEqual(t, j, time.Duration(0))
			require.Less(t, j, time.Minute)
			seen[j] = true
		}
		require.Greater(t, len(seen), 40)
	})
	t.Run("no jitter", func(t *testing.T) {
		require.Zero(t, fireJitter("a", 1, n, 0))
	})
}

func TestFireKey(t *testing.T) {
	t.Parallel()
	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	first := time.Date(2026, 11, 1, 1, 30, 0, 0, ny)
	second := first.Add(time.Hour) // 01:30 again, after falling back
	require.Equal(t, first.Format("15:04"), second.In(ny).Format("15:04"))
	require.Equal(t, "hv:sched:nightly:3:2026-11-01T05:30:00.000Z", FireKey("nightly", 3, first))
	require.Equal(t, "hv:sched:nightly:3:2026-11-01T06:30:00.000Z", FireKey("nightly", 3, second))
}

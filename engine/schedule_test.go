package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// scheduleBundle is a shard whose engine runs on a test clock that starts
// 10 s after a whole minute, t0: a schedule firing every minute fires at
// t0 + k minutes as the test advances the clock by minutes (the test has
// 50 s of real time before the real seconds cross a minute).
type scheduleBundle struct {
	*testBundle
	clock *stepClock
	t0    time.Time
	e     *Engine
}

func setupSchedules(t *testing.T) *scheduleBundle {
	t.Helper()
	now := time.Now()
	t0 := now.Add(48 * time.Hour).Truncate(time.Minute)
	sb := &scheduleBundle{testBundle: setup(t), clock: newStepClock(t0.Add(10 * time.Second).Sub(now)), t0: t0.UTC()}
	sb.e = sb.engine(t)
	return sb
}

// engine starts an engine on the bundle's clock.
func (sb *scheduleBundle) engine(t *testing.T, mutate ...func(*Config)) *Engine {
	t.Helper()
	return sb.testBundle.engine(t, append([]func(*Config){func(c *Config) { c.Clock = sb.clock }}, mutate...)...)
}

// minute is t0 + k minutes.
func (sb *scheduleBundle) minute(k int) time.Time { return sb.t0.Add(time.Duration(k) * time.Minute) }

func (sb *scheduleBundle) create(t *testing.T, id string, spec ScheduleSpec) Schedule {
	t.Helper()
	s, err := sb.e.CreateSchedule(ctxT(t), id, spec, false)
	require.NoError(t, err)
	return s
}

// waitFires waits until the schedule has n recorded fires none of which
// is pending (unless pending allows it) and returns them oldest first.
func waitFires(t *testing.T, e *Engine, id string, n int, pending bool) []ScheduleFire {
	t.Helper()
	var fires []ScheduleFire
	eventually(t, fmt.Sprintf("%d fires of %s", n, id), func() bool {
		s, err := e.GetSchedule(context.Background(), id)
		if err != nil || len(s.Fires) != n {
			return false
		}
		fires = s.Fires
		for _, f := range fires {
			if f.Outcome == firePending && !pending {
				return false
			}
		}
		return true
	})
	for i, j := 0, len(fires)-1; i < j; i, j = i+1, j-1 {
		fires[i], fires[j] = fires[j], fires[i]
	}
	return fires
}

func outcomes(fires []ScheduleFire) []string {
	out := make([]string, len(fires))
	for i, f := range fires {
		out[i] = f.Outcome
	}
	return out
}

func nominals(fires []ScheduleFire) []time.Time {
	out := make([]time.Time, len(fires))
	for i, f := range fires {
		out[i] = f.NominalTime.UTC()
	}
	return out
}

// runsPerKey counts the runs started under each schedule key.
func runsPerKey(t *testing.T, pool *pgxpool.Pool) map[string]int {
	t.Helper()
	rows, err := pool.Query(ctxT(t), `SELECT idempotency_key, count(*) FROM harvest_executions
		 WHERE idempotency_key LIKE 'hv:sched:%' GROUP BY 1`)
	require.NoError(t, err)
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var key string
		var n int
		require.NoError(t, rows.Scan(&key, &n))
		out[key] = n
	}
	require.NoError(t, rows.Err())
	return out
}

// release lets a "block" run close.
func release(t *testing.T, e *Engine, id string) {
	t.Helper()
	_, err := e.Signal(ctxT(t), SignalRequest{ExecutionID: uuid.MustParse(id), SignalName: goSignal.Name(), Payload: []byte(`"go"`)})
	require.NoError(t, err)
}

func TestSchedules(t *testing.T) {
	t.Parallel()
	every := func(policy, wf string) ScheduleSpec {
		return ScheduleSpec{WorkflowName: wf, Cron: "* * * * *", Overlap: policy, Input: []byte(`"x"`)}
	}

	t.Run("cron fires once at each nominal time", func(t *testing.T) {
		t.Parallel()
		sb := setupSchedules(t)
		s := sb.create(t, "every-minute", every(OverlapSkip, "noop"))
		require.Equal(t, int64(1), s.Generation)
		require.Equal(t, []time.Time{sb.minute(1), sb.minute(2), sb.minute(3), sb.minute(4), sb.minute(5)}, s.NextFires)
		sb.clock.advance(time.Minute)
		waitFires(t, sb.e, "every-minute", 1, false)
		sb.clock.advance(time.Minute)
		waitFires(t, sb.e, "every-minute", 2, false)
		sb.clock.advance(time.Minute)
		fires := waitFires(t, sb.e, "every-minute", 3, false)
		require.Equal(t, []string{fireStarted, fireStarted, fireStarted}, outcomes(fires))
		require.Equal(t, []time.Time{sb.minute(1), sb.minute(2), sb.minute(3)}, nominals(fires))
		runs := runsPerKey(t, sb.pool)
		require.Len(t, runs, 3)
		for _, f := range fires {
			require.Equal(t, ScheduleFireKey("every-minute", 1, f.NominalTime), f.Key)
			require.Equal(t, 1, runs[f.Key], f.Key)
			require.Equal(t, StateCompleted, waitOutcome(t, sb.pool, uuid.MustParse(f.ExecutionID)))
		}
		got, err := sb.e.GetSchedule(ctxT(t), "every-minute")
		require.NoError(t, err)
		require.Equal(t, sb.minute(3), got.Cursor.UTC())
		require.Equal(t, sb.minute(4), got.NextFires[0])
	})

	t.Run("an interval schedule with jitter fires at its nominal times", func(t *testing.T) {
		t.Parallel()
		sb := setupSchedules(t)
		sb.create(t, "half", ScheduleSpec{WorkflowName: "noop", Interval: 30 * time.Second, Jitter: 5 * time.Second, Overlap: OverlapAllowAll})
		sb.clock.advance(time.Minute)
		fires := waitFires(t, sb.e, "half", 2, false)
		require.Equal(t, []time.Time{sb.t0.Add(30 * time.Second), sb.minute(1)}, nominals(fires))
		require.Equal(t, []string{fireStarted, fireStarted}, outcomes(fires))
		require.Equal(t, "half-"+sb.minute(1).Format(nominalFormat), fires[1].WorkflowID, "allow_all runs have ids of their own")
	})

	t.Run("skip skips a fire while the previous run runs", func(t *testing.T) {
		t.Parallel()
		sb := setupSchedules(t)
		sb.create(t, "skipper", every(OverlapSkip, "block"))
		sb.clock.advance(time.Minute)
		first := waitFires(t, sb.e, "skipper", 1, false)[0]
		require.Equal(t, fireStarted, first.Outcome)
		sb.clock.advance(time.Minute)
		fires := waitFires(t, sb.e, "skipper", 2, false)
		require.Equal(t, fireSkipped, fires[1].Outcome)
		require.Contains(t, fires[1].Reason, "overlap (skip): run "+first.ExecutionID)
		release(t, sb.e, first.ExecutionID)
		waitOutcome(t, sb.pool, uuid.MustParse(first.ExecutionID))
		sb.clock.advance(time.Minute)
		fires = waitFires(t, sb.e, "skipper", 3, false)
		require.Equal(t, []string{fireStarted, fireSkipped, fireStarted}, outcomes(fires))
		require.Equal(t, "skipper", fires[2].WorkflowID)
		require.Len(t, runsPerKey(t, sb.pool), 2)
	})

	t.Run("buffer one waits with one fire and skips the rest", func(t *testing.T) {
		t.Parallel()
		sb := setupSchedules(t)
		sb.create(t, "buffered", every(OverlapBufferOne, "block"))
		sb.clock.advance(time.Minute)
		first := waitFires(t, sb.e, "buffered", 1, false)[0]
		sb.clock.advance(time.Minute)
		fires := waitFires(t, sb.e, "buffered", 2, true)
		require.Equal(t, firePending, fires[1].Outcome, "the second fire waits for the first run")
		sb.clock.advance(time.Minute)
		fires = waitFires(t, sb.e, "buffered", 3, true)
		require.Equal(t, []string{fireStarted, firePending, fireSkipped}, outcomes(fires))
		require.Contains(t, fires[2].Reason, "overlap (buffer_one)")
		release(t, sb.e, first.ExecutionID)
		fires = waitFires(t, sb.e, "buffered", 3, false)
		require.Equal(t, []string{fireStarted, fireStarted, fireSkipped}, outcomes(fires))
		require.NotEqual(t, first.ExecutionID, fires[1].ExecutionID)
		require.Len(t, runsPerKey(t, sb.pool), 2)
	})

	t.Run("allow all runs fires side by side", func(t *testing.T) {
		t.Parallel()
		sb := setupSchedules(t)
		sb.create(t, "all", every(OverlapAllowAll, "block"))
		sb.clock.advance(2 * time.Minute)
		fires := waitFires(t, sb.e, "all", 2, false)
		require.Equal(t, []string{fireStarted, fireStarted}, outcomes(fires))
		for _, f := range fires {
			x, err := sb.e.GetExecution(ctxT(t), uuid.MustParse(f.ExecutionID))
			require.NoError(t, err)
			require.Equal(t, StateRunning, x.State)
		}
	})

	t.Run("catch-up after 10 minutes down", func(t *testing.T) {
		t.Parallel()
		sb := setupSchedules(t)
		sb.create(t, "wide", ScheduleSpec{WorkflowName: "noop", Cron: "* * * * *", Overlap: OverlapAllowAll, CatchUpWindow: time.Hour})
		sb.create(t, "narrow", ScheduleSpec{WorkflowName: "noop", Cron: "* * * * *", Overlap: OverlapAllowAll, CatchUpWindow: 3 * time.Minute})
		sb.create(t, "one", ScheduleSpec{WorkflowName: "noop", Cron: "* * * * *", Overlap: OverlapSkip})
		sb.e.Stop()
		sb.clock.advance(10 * time.Minute)
		e := sb.engine(t)
		wide := waitFires(t, e, "wide", 10, false)
		require.Equal(t, sb.minute(1), wide[0].NominalTime.UTC())
		require.Equal(t, sb.minute(10), wide[9].NominalTime.UTC())
		narrow := waitFires(t, e, "narrow", 4, false)
		require.Equal(t, []string{fireSkipped, fireStarted, fireStarted, fireStarted}, outcomes(narrow))
		require.Equal(t, []time.Time{sb.minute(7), sb.minute(8), sb.minute(9), sb.minute(10)}, nominals(narrow))
		require.Contains(t, narrow[0].Reason, "missed: 7 fire(s)")
		one := waitFires(t, e, "one", 10, false)
		require.Equal(t, fireStarted, one[0].Outcome, "skip starts the first missed fire")
		for _, f := range one[1:] {
			require.Equal(t, fireSkipped, f.Outcome, "and skips the ones caught up while it is pending")
		}
	})

	t.Run("pause, resume and trigger", func(t *testing.T) {
		t.Parallel()
		sb := setupSchedules(t)
		sb.create(t, "pp", every(OverlapAllowAll, "noop"))
		require.NoError(t, sb.e.PauseSchedule(ctxT(t), "pp"))
		sb.clock.advance(2 * time.Minute)
		trig, _, err := sb.e.TriggerSchedule(ctxT(t), "pp", "")
		require.NoError(t, err)
		require.True(t, trig.Triggered)
		fires := waitFires(t, sb.e, "pp", 1, false)
		require.Equal(t, fireStarted, fires[0].Outcome, "a paused schedule can be triggered")
		require.Equal(t, trig.Key, fires[0].Key)
		require.NoError(t, sb.e.ResumeSchedule(ctxT(t), "pp"))
		s, err := sb.e.GetSchedule(ctxT(t), "pp")
		require.NoError(t, err)
		require.False(t, s.Paused)
		require.Equal(t, sb.minute(3), s.NextFires[0], "the minutes passed while paused are not caught up")
		sb.clock.advance(time.Minute)
		fires = waitFires(t, sb.e, "pp", 2, false)
		require.Equal(t, sb.minute(3), fires[1].NominalTime.UTC())
		require.False(t, fires[1].Triggered)
		require.ErrorIs(t, sb.e.PauseSchedule(ctxT(t), "nope"), ErrNotFound)
		_, _, err = sb.e.TriggerSchedule(ctxT(t), "nope", "")
		require.ErrorIs(t, err, ErrNotFound)
		_, _, err = sb.e.TriggerSchedule(ctxT(t), "nope", "k")
		require.ErrorIs(t, err, ErrNotFound)
	})

	t.Run("a retried keyed trigger makes one run", func(t *testing.T) {
		t.Parallel()
		sb := setupSchedules(t)
		sb.create(t, "kt", every(OverlapAllowAll, "noop"))
		require.NoError(t, sb.e.PauseSchedule(ctxT(t), "kt"))
		first, dup, err := sb.e.TriggerSchedule(ctxT(t), "kt", "deploy-42")
		require.NoError(t, err)
		require.False(t, dup)
		require.Equal(t, "hv:sched:kt:1:trigger:deploy-42", first.Key)
		sb.clock.advance(time.Second) // a retry comes later: another nominal time, were it not keyed
		again, dup, err := sb.e.TriggerSchedule(ctxT(t), "kt", "deploy-42")
		require.NoError(t, err)
		require.True(t, dup, "the retry finds the first trigger's fire")
		require.Equal(t, first.Key, again.Key)
		require.Equal(t, first.NominalTime.UTC(), again.NominalTime.UTC())
		fires := waitFires(t, sb.e, "kt", 1, false)
		require.Equal(t, fireStarted, fires[0].Outcome)
		_, dup, err = sb.e.TriggerSchedule(ctxT(t), "kt", "deploy-42")
		require.NoError(t, err)
		require.True(t, dup, "after the run started too")
		_, dup, err = sb.e.TriggerSchedule(ctxT(t), "kt", "deploy-43")
		require.NoError(t, err)
		require.False(t, dup, "another key is another fire")
		waitFires(t, sb.e, "kt", 2, false)
		require.Equal(t, map[string]int{"hv:sched:kt:1:trigger:deploy-42": 1, "hv:sched:kt:1:trigger:deploy-43": 1}, runsPerKey(t, sb.pool))
	})

	t.Run("delete and re-create does not collide", func(t *testing.T) {
		t.Parallel()
		sb := setupSchedules(t)
		sb.create(t, "again", every(OverlapSkip, "noop"))
		sb.clock.advance(time.Minute)
		old := waitFires(t, sb.e, "again", 1, false)[0]
		_, err := sb.e.CreateSchedule(ctxT(t), "again", every(OverlapSkip, "noop"), false)
		require.ErrorIs(t, err, ErrScheduleExists)
		require.NoError(t, sb.e.DeleteSchedule(ctxT(t), "again"))
		_, err = sb.e.GetSchedule(ctxT(t), "again")
		require.ErrorIs(t, err, ErrNotFound)
		require.ErrorIs(t, sb.e.DeleteSchedule(ctxT(t), "again"), ErrNotFound)
		// The new owner's clock is a minute behind: the re-created
		// schedule's first nominal time is the old generation's.
		sb.e.Stop()
		behind := newStepClock(sb.clock.Offset() - time.Minute)
		sb.e = sb.testBundle.engine(t, func(c *Config) { c.Clock = behind })
		s := sb.create(t, "again", every(OverlapSkip, "noop"))
		require.Equal(t, int64(2), s.Generation)
		require.Empty(t, s.Fires, "the old generation's fires are gone")
		behind.advance(time.Minute)
		fresh := waitFires(t, sb.e, "again", 1, false)[0]
		require.Equal(t, old.NominalTime, fresh.NominalTime)
		require.Equal(t, fireStarted, fresh.Outcome)
		require.NotEqual(t, old.ExecutionID, fresh.ExecutionID, "a new generation starts a new run")
		require.Equal(t, ScheduleFireKey("again", 2, fresh.NominalTime), fresh.Key)
	})

	t.Run("a gated fire is skipped under skip and retried under buffer one", func(t *testing.T) {
		t.Parallel()
		sb := setupSchedules(t)
		require.NoError(t, sb.e.CloseGate(ctxT(t), Gate{ID: "maint", ScopeKind: GateWorkflowName, ScopeValue: "noop",
			Reason: "maintenance", CreatedAt: time.Now()}))
		sb.create(t, "gskip", every(OverlapSkip, "noop"))
		sb.create(t, "gbuf", every(OverlapBufferOne, "noop"))
		sb.clock.advance(time.Minute)
		skipped := waitFires(t, sb.e, "gskip", 1, false)[0]
		require.Equal(t, fireSkipped, skipped.Outcome)
		require.Equal(t, "gated: admission gate maint: maintenance", skipped.Reason)
		var waiting ScheduleFire
		eventually(t, "the buffered fire's refusal", func() bool {
			waiting = waitFires(t, sb.e, "gbuf", 1, true)[0]
			return waiting.Reason != ""
		})
		require.Equal(t, firePending, waiting.Outcome)
		require.Contains(t, waiting.Reason, "admission blocked")
		_, err := sb.e.OpenGate(ctxT(t), "maint")
		require.NoError(t, err)
		started := waitFires(t, sb.e, "gbuf", 1, false)[0]
		require.Equal(t, fireStarted, started.Outcome)
	})

	t.Run("an end stops the schedule", func(t *testing.T) {
		t.Parallel()
		sb := setupSchedules(t)
		end := sb.minute(2)
		sb.create(t, "ends", ScheduleSpec{WorkflowName: "noop", Cron: "* * * * *", EndAt: &end})
		sb.clock.advance(5 * time.Minute)
		fires := waitFires(t, sb.e, "ends", 2, false)
		require.Equal(t, []time.Time{sb.minute(1), sb.minute(2)}, nominals(fires))
		s, err := sb.e.GetSchedule(ctxT(t), "ends")
		require.NoError(t, err)
		require.Empty(t, s.NextFires)
	})

	t.Run("bad specs are refused", func(t *testing.T) {
		t.Parallel()
		sb := setupSchedules(t)
		for name, c := range map[string]struct {
			id   string
			spec ScheduleSpec
			want error
		}{
			"unknown workflow": {"a", ScheduleSpec{WorkflowName: "nope", Cron: "* * * * *"}, ErrUnknownWorkflow},
			"bad cron":         {"a", ScheduleSpec{WorkflowName: "noop", Cron: "nope"}, ErrInvalidArgument},
			"bad overlap":      {"a", ScheduleSpec{WorkflowName: "noop", Cron: "* * * * *", Overlap: "some"}, ErrInvalidArgument},
			"huge jitter":      {"a", ScheduleSpec{WorkflowName: "noop", Cron: "* * * * *", Jitter: 1 << 62}, ErrInvalidArgument},
			"tiny catch-up":    {"a", ScheduleSpec{WorkflowName: "noop", Cron: "* * * * *", CatchUpWindow: time.Millisecond}, ErrInvalidArgument},
			"input not JSON":   {"a", ScheduleSpec{WorkflowName: "noop", Cron: "* * * * *", Input: []byte("{")}, ErrInvalidArgument},
			"empty id":         {"", ScheduleSpec{WorkflowName: "noop", Cron: "* * * * *"}, ErrInvalidArgument},
			"id with a colon":  {"a:b", ScheduleSpec{WorkflowName: "noop", Cron: "* * * * *"}, ErrInvalidArgument},
			"id with a NUL":    {"a\x00", ScheduleSpec{WorkflowName: "noop", Cron: "* * * * *"}, ErrInvalidArgument},
			"long id":          {strings.Repeat("a", 129), ScheduleSpec{WorkflowName: "noop", Cron: "* * * * *"}, ErrInvalidArgument},
		} {
			_, err := sb.e.CreateSchedule(ctxT(t), c.id, c.spec, false)
			require.ErrorIs(t, err, c.want, name)
		}
		list, err := sb.e.ListSchedules(ctxT(t))
		require.NoError(t, err)
		require.Empty(t, list)
	})
}

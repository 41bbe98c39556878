package harvesttest_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine"
	"github.com/harvestd/harvest/harvesttest"
)

var approved = harvest.NewSignal[string]("approved")

// napTimes is what the nap workflow saw of workflow time.
type napTimes struct {
	Start, Woke, GaveUp time.Time
	Approved            bool
}

// napWF sleeps 24 h, then waits an hour for an approval.
var napWF = harvest.NewWorkflow("nap", func(ctx harvest.Context, _ string) (napTimes, error) {
	out := napTimes{Start: ctx.Now()}
	if err := harvest.Sleep(ctx, 24*time.Hour); err != nil {
		return out, err
	}
	out.Woke = ctx.Now()
	_, ok, err := approved.ReceiveWithTimeout(ctx, time.Hour)
	out.Approved, out.GaveUp = ok, ctx.Now()
	return out, err
})

// attempts counts the calls of an activity, by attempt and key.
type attempts struct {
	mu   sync.Mutex
	keys []string
}

func (a *attempts) add(ctx *harvest.ActivityContext) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.keys = append(a.keys, ctx.IdempotencyKey().String())
	return len(a.keys)
}

func (a *attempts) get() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.keys...)
}

type testBundle struct {
	reg  *harvest.Registry
	real *attempts // calls of the real charge activity
}

// charge fails its first two attempts, each retried an hour later.
func (b *testBundle) charge() *harvest.Activity[string, int] {
	return harvest.NewActivity("charge", func(ctx *harvest.ActivityContext, _ string) (int, error) {
		if n := b.real.add(ctx); n <= 2 {
			return 0, errors.New("card network down")
		}
		return ctx.Attempt(), nil
	}, harvest.ActivityOptions{Retry: &harvest.RetryPolicy{
		MaxAttempts: 3, InitialInterval: time.Hour, BackoffCoefficient: 1, MaxInterval: time.Hour}})
}

// stuck runs until its attempt is cancelled; one attempt of an hour.
var stuck = harvest.NewActivity("stuck", func(ctx *harvest.ActivityContext, _ string) (string, error) {
	<-ctx.Done()
	return "", ctx.Err()
}, harvest.ActivityOptions{StartToClose: time.Hour, Retry: &harvest.RetryPolicy{MaxAttempts: 1}})

func setup(t *testing.T) (*harvesttest.Env, *testBundle) {
	t.Helper()
	b := &testBundle{reg: harvest.NewRegistry(), real: &attempts{}}
	charge := b.charge()
	require.NoError(t, b.reg.Register(napWF, charge, stuck,
		harvest.NewWorkflow("pay", func(ctx harvest.Context, in string) (int, error) {
			return charge.Execute(ctx, in).Get(ctx)
		}),
		harvest.NewWorkflow("wait_stuck", func(ctx harvest.Context, in string) (string, error) {
			_, err := stuck.Execute(ctx, in).Get(ctx)
			var ae *harvest.ActivityError
			if errors.As(err, &ae) {
				return ae.TimeoutType, nil
			}
			return "", err
		})))
	return harvesttest.New(t, b.reg), b
}

// timerStarts are the run's TimerStarted events: their times and data.
func timerStarts(t *testing.T, env *harvesttest.Env, id uuid.UUID) (at []time.Time, data []harvest.TimerStartedData) {
	t.Helper()
	for _, ev := range env.History(id) {
		if ev.Type != harvest.EventTimerStarted {
			continue
		}
		var d harvest.TimerStartedData
		require.NoError(t, json.Unmarshal(ev.Data, &d))
		at, data = append(at, ev.Timestamp), append(data, d)
	}
	return at, data
}

func TestClock(t *testing.T) {
	t.Parallel()

	t.Run("SleepAndSignalTimeoutRunOnTheClock", func(t *testing.T) {
		t.Parallel()
		env, _ := setup(t)
		id := env.Start("nap", "").ExecutionID
		sleep := env.NextTimer(id)
		env.Advance(24 * time.Hour)
		timeout := env.NextTimer(id) // the signal's: the sleep's has fired
		env.Advance(time.Hour)
		var out napTimes
		env.Output(id, &out)

		require.False(t, out.Approved, "no signal came")
		require.Equal(t, 25*time.Hour, env.Clock().Offset())
		// The recorded fire times are exactly the durations after the
		// commands that started them.
		at, data := timerStarts(t, env, id)
		require.Len(t, data, 2)
		require.Equal(t, 24*time.Hour, data[0].FireAt.Sub(at[0]))
		require.Equal(t, time.Hour, data[1].FireAt.Sub(at[1]))
		require.True(t, sleep.FireAt.Equal(*data[0].FireAt) && timeout.FireAt.Equal(*data[1].FireAt))
		// The workflow woke once the clock passed each fire time; what is
		// over the duration is the real time the test took (under its
		// timeout).
		requireBetween(t, out.Woke.Sub(out.Start), 24*time.Hour, harvesttest.TimeoutDefault, "slept")
		requireBetween(t, out.GaveUp.Sub(out.Woke), time.Hour, harvesttest.TimeoutDefault, "waited for the signal")
		require.False(t, out.Woke.Before(sleep.FireAt) || out.GaveUp.Before(timeout.FireAt))
	})

	t.Run("RetryBackoffRunsOnTheClock", func(t *testing.T) {
		t.Parallel()
		env, b := setup(t)
		id := env.Start("pay", "order-1").ExecutionID
		for attempt := 1; attempt <= 2; attempt++ {
			d := env.WaitFor(id, fmt.Sprintf("retry after attempt %d", attempt), func(d engine.Description) bool {
				return len(d.PendingActivities) == 1 && d.PendingActivities[0].Attempt == attempt &&
					d.PendingActivities[0].Status == "pending"
			})
			a := d.PendingActivities[0]
			require.NotNil(t, a.LastFailedAt)
			require.Equal(t, time.Hour, a.ScheduledAt.Sub(*a.LastFailedAt), "due the backoff after the failure")
			env.Advance(time.Hour)
		}
		var got int
		env.Output(id, &got)
		require.Equal(t, 3, got, "the third attempt succeeded")
		require.Len(t, b.real.get(), 3)
		require.Equal(t, 2*time.Hour, env.Clock().Offset(), "two hours of backoff, no real waiting")
	})

	t.Run("KeysAndLeasesStayOnTheDatabasesClock", func(t *testing.T) {
		t.Parallel()
		env, _ := setup(t)
		first := env.Start("nap", "", harvesttest.WithIdempotencyKey("once"))
		env.Advance(48 * time.Hour) // twice the idempotency window
		again := env.Start("nap", "", harvesttest.WithIdempotencyKey("once"))
		require.True(t, again.Deduplicated, "the key's window is on the database's clock")
		require.Equal(t, first.ExecutionID, again.ExecutionID)
		require.True(t, env.Engine().Owning(), "the lease did not expire")
		require.Equal(t, engine.StateRunning, env.Describe(first.ExecutionID).Execution.State, "waiting for its signal")
	})

	t.Run("DelayedStartsRunOnTheClock", func(t *testing.T) {
		t.Parallel()
		env, _ := setup(t)
		id := env.Start("wait_stuck", "", harvesttest.WithDelay(time.Hour)).ExecutionID
		require.Len(t, env.History(id), 1, "only WorkflowStarted before the delay")
		env.Advance(time.Hour)
		env.WaitFor(id, "the first workflow task", func(d engine.Description) bool { return len(d.PendingActivities) == 1 })
	})

	t.Run("ActivityTimeoutRunsOnTheClock", func(t *testing.T) {
		t.Parallel()
		env, _ := setup(t)
		id := env.Start("wait_stuck", "").ExecutionID
		env.WaitFor(id, "running attempt", func(d engine.Description) bool {
			return len(d.PendingActivities) == 1 && d.PendingActivities[0].Status == "running"
		})
		env.Advance(time.Hour)
		var timeout string
		env.Output(id, &timeout)
		require.Equal(t, engine.TimeoutStartToClose, timeout)
	})
}

func TestReplaceActivity(t *testing.T) {
	t.Parallel()

	t.Run("TheFakeRunsWithTheRealKeys", func(t *testing.T) {
		t.Parallel()
		env, b := setup(t)
		fake := &attempts{}
		env.ReplaceActivity("charge", harvesttest.Fake(func(ctx *harvest.ActivityContext, order string) (int, error) {
			if fake.add(ctx) == 1 {
				return 0, harvest.NewApplicationError("declined", "try again")
			}
			return 42, nil
		}))
		first := env.Start("pay", "order-1", harvesttest.WithIdempotencyKey("order-1"))
		again := env.Start("pay", "order-1", harvesttest.WithIdempotencyKey("order-1"))
		require.True(t, again.Deduplicated)
		require.Equal(t, first.ExecutionID, again.ExecutionID, "one run per start key")
		d := env.WaitFor(first.ExecutionID, "retry", func(d engine.Description) bool {
			return len(d.PendingActivities) == 1 && d.PendingActivities[0].Status == "pending"
		})
		env.SkipTime(first.ExecutionID) // the hour of backoff
		var got int
		env.Output(first.ExecutionID, &got)

		require.Equal(t, 42, got)
		require.Empty(t, b.real.get(), "the real activity never ran")
		key := harvest.ActivityKey(first.ExecutionID.String(), "1").String()
		require.Equal(t, []string{key, key}, fake.get(), "both attempts carry the invocation's key")
		require.Equal(t, key, d.PendingActivities[0].IdempotencyKey, "the key recorded for operators")
		other := env.Start("pay", "order-2", harvesttest.WithIdempotencyKey("order-2"))
		env.Output(other.ExecutionID, &got) // the fake succeeds at once now
		require.NotEqual(t, key, fake.get()[2], "another run, another key")
	})
}

// requireBetween requires want <= got < want+slack.
func requireBetween(t *testing.T, got, want, slack time.Duration, what string) {
	t.Helper()
	require.True(t, got >= want && got < want+slack, "%s %s, want %s to %s", what, got, want, want+slack)
}

package engine

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
)

// stepClock is a Clock the test moves ahead.
type stepClock struct {
	mu  sync.Mutex
	off time.Duration
	adv chan struct{}
}

func newStepClock(off time.Duration) *stepClock {
	return &stepClock{off: off, adv: make(chan struct{})}
}

func (c *stepClock) Offset() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.off
}

func (c *stepClock) Advanced() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.adv
}

func (c *stepClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.off += d
	close(c.adv)
	c.adv = make(chan struct{})
}

// dbNow is the database's clock.
func dbNow(t *testing.T, b *testBundle) time.Time {
	t.Helper()
	var now time.Time
	require.NoError(t, b.pool.QueryRow(ctxT(t), `SELECT now()`).Scan(&now))
	return now
}

func TestClock(t *testing.T) {
	t.Parallel()
	clockWF := harvest.NewWorkflow("clock", func(ctx harvest.Context, _ string) (time.Time, error) {
		return ctx.Now(), nil
	})
	napWF := harvest.NewWorkflow("nap", func(ctx harvest.Context, _ string) (time.Time, error) {
		err := harvest.Sleep(ctx, 24*time.Hour)
		return ctx.Now(), err
	})
	setup := func(t *testing.T, batchMax int) (*testBundle, *Engine, *stepClock) {
		t.Helper()
		clock := newStepClock(24 * time.Hour)
		b := setup(t)
		require.NoError(t, b.reg.Register(clockWF, napWF))
		e := b.engine(t, func(c *Config) { c.Clock, c.StartBatchMax, c.LeaseTTL = clock, batchMax, time.Minute })
		return b, e, clock
	}

	// Workflow time is the database's plus the offset, and the one-trip
	// start path still commits in one trip.
	t.Run("OneTripStartsStampTheClocksTime", func(t *testing.T) {
		t.Parallel()
		b, e, _ := setup(t, 1)
		setClock(t, b, e, -500*time.Millisecond)
		before := dbNow(t, b)
		r := runBatch(t, e, StartRequest{WorkflowName: "clock"})
		require.Equal(t, [4]int64{1, 0, 0, 0}, trips(e), "one batch, one trip, no miss")
		x := waitClosed(t, e, r.res[0].ExecutionID)
		var saw time.Time
		require.NoError(t, json.Unmarshal(x.Output, &saw))
		at := eventTimes(t, b, r.res[0].ExecutionID)
		require.Len(t, at, 2)
		require.True(t, saw.Equal(at[0]) && saw.Equal(at[1]), "the workflow saw %s, its events say %v", saw, at)
		ahead := saw.Sub(before)
		require.True(t, ahead > 23*time.Hour && ahead < 24*time.Hour+time.Minute, "workflow time %s ahead of the database", ahead)
		require.Less(t, x.CreatedAt.Sub(before), time.Minute, "the run's bookkeeping stays on the database's clock")
	})

	t.Run("SingleStartsAndTheirTimersRunOnTheClock", func(t *testing.T) {
		t.Parallel()
		b, e, clock := setup(t, 1)
		r := start(t, e, StartRequest{WorkflowName: "nap"}) // group commit off: the single path
		var fireAt time.Time
		require.Eventually(t, func() bool {
			return b.pool.QueryRow(ctxT(t), `SELECT fire_at FROM harvest_timers WHERE execution_id = $1`,
				r.ExecutionID).Scan(&fireAt) == nil
		}, 20*time.Second, 10*time.Millisecond, "the workflow task starts its timer")
		at := eventTimes(t, b, r.ExecutionID)
		require.Len(t, at, 2)
		require.Equal(t, 24*time.Hour, fireAt.Sub(at[1]), "due 24 h after TimerStarted")
		require.Greater(t, at[0].Sub(dbNow(t, b)), 23*time.Hour, "WorkflowStarted stamped ahead of the database")
		clock.advance(24 * time.Hour)
		require.Equal(t, StateCompleted, waitClosed(t, e, r.ExecutionID).State)
	})

	t.Run("TwoTripStartsAndTimersRunOnTheClock", func(t *testing.T) {
		t.Parallel()
		b, e, clock := setup(t, 1)
		e.in.OneTripPaused.Store(oneTripPause)
		r := runBatch(t, e, StartRequest{WorkflowName: "nap"})
		require.Equal(t, [4]int64{0, 1, 0, 0}, trips(e), "two trips")
		id := r.res[0].ExecutionID
		var fireAt time.Time
		require.NoError(t, b.pool.QueryRow(ctxT(t), `SELECT fire_at FROM harvest_timers WHERE execution_id = $1`, id).Scan(&fireAt))
		at := eventTimes(t, b, id)
		require.Len(t, at, 2)
		require.True(t, at[0].Equal(at[1]), "WorkflowStarted and TimerStarted, by the first task: %v", at)
		require.Equal(t, 24*time.Hour, fireAt.Sub(at[0]), "due 24 h after the run started, in workflow time")
		require.Greater(t, at[0].Sub(dbNow(t, b)), 23*time.Hour, "stamped ahead of the database")
		clock.advance(24 * time.Hour)
		x := waitClosed(t, e, id)
		var woke time.Time
		require.NoError(t, json.Unmarshal(x.Output, &woke))
		require.False(t, woke.Before(fireAt), "woke at %s, before the timer's %s", woke, fireAt)
		require.Less(t, woke.Sub(fireAt), time.Minute, "woke once the clock passed the timer")
	})
}

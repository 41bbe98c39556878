package engine

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/store"
)

// trips is how the engine's start batches ended so far: committed in one
// trip, in two trips, one-trip misses, one-trip batches failed as a whole.
func trips(e *Engine) [4]int64 {
	return [4]int64{e.in.BatchTrips[0].Load(), e.in.BatchTrips[1].Load(), e.in.BatchTrips[2].Load(), e.in.BatchTrips[3].Load()}
}

// eventTimes lists the created_at of the run's events, in event order.
func eventTimes(t *testing.T, b *testBundle, id uuid.UUID) []time.Time {
	t.Helper()
	rows, err := b.pool.Query(ctxT(t), `SELECT created_at FROM harvest_events WHERE execution_id = $1 ORDER BY event_id`, id)
	require.NoError(t, err)
	defer rows.Close()
	var out []time.Time
	for rows.Next() {
		var at time.Time
		require.NoError(t, rows.Scan(&at))
		out = append(out, at)
	}
	require.NoError(t, rows.Err())
	return out
}

// setClock replaces the engine's measure of the database clock with one
// that is off by skew. It counts from the time the answer came back, not
// from the time the query went out as the engine does: however slow the
// query, the measure is never later than the database's clock plus skew.
func setClock(t *testing.T, b *testBundle, e *Engine, skew time.Duration) {
	t.Helper()
	var db time.Time
	require.NoError(t, b.pool.QueryRow(ctxT(t), `SELECT now()`).Scan(&db))
	got := time.Now()
	e.clock.Force(db.Add(skew).Sub(got.Round(0)))
}

func TestOneTripStartBatch(t *testing.T) {
	t.Parallel()
	clockWF := harvest.NewWorkflow("clock", func(ctx harvest.Context, _ string) (time.Time, error) {
		return ctx.Now(), nil
	})
	napWF := harvest.NewWorkflow("nap", func(ctx harvest.Context, _ string) (string, error) {
		return "rested", harvest.Sleep(ctx, time.Hour)
	})
	// oneTripSetup's engine has its clock safely behind (a sample taken
	// on a busy machine cannot make the estimate late), and renews its
	// lease seldom (no renewal measures the clock during a case).
	oneTripSetup := func(t *testing.T) (*testBundle, *Engine) {
		t.Helper()
		b, e := gcSetup(t, func(c *Config) { c.LeaseTTL = time.Minute })
		require.NoError(t, b.reg.Register(clockWF, napWF))
		setClock(t, b, e, -500*time.Millisecond)
		return b, e
	}

	t.Run("FreshStartsCommitInOneTrip", func(t *testing.T) {
		t.Parallel()
		b, e := oneTripSetup(t)
		r := runBatch(t, e, StartRequest{WorkflowName: "block", IdempotencyKey: "a"},
			StartRequest{WorkflowName: "block", IdempotencyKey: "b", WorkflowID: "order-b"},
			StartRequest{WorkflowName: "block"}, StartRequest{WorkflowName: "block", IdempotencyKey: "a"})
		require.Equal(t, [4]int64{1, 0, 0, 0}, trips(e), "one batch, one trip, no miss")
		for i := range 3 {
			require.NoError(t, r.errs[i])
			require.False(t, r.replies[i].Single, "request %d", i)
			require.True(t, r.res[i].StartedFresh, "request %d", i)
		}
		require.True(t, r.res[3].Deduplicated, "a key repeated inside the batch")
		require.Equal(t, r.res[0].ExecutionID, r.res[3].ExecutionID)
		require.Equal(t, 3, countRows(t, b, `SELECT count(*) FROM harvest_executions`))
		require.Equal(t, 2, countRows(t, b, `SELECT count(*) FROM harvest_start_idempotency`))
		require.Equal(t, 3, countRows(t, b, `SELECT count(*) FROM harvest_events WHERE event_type = 'WorkflowStarted'`))
		got, ok, err := e.LookupStartKey(ctxT(t), "block", "b")
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, r.res[1].ExecutionID, got.ExecutionID)
	})

	t.Run("EventsCarryTheTimeTheFirstTaskSaw", func(t *testing.T) {
		t.Parallel()
		b, e := oneTripSetup(t)
		r := runBatch(t, e, StartRequest{WorkflowName: "clock", IdempotencyKey: "c"}, StartRequest{WorkflowName: "nap"})
		require.Equal(t, [4]int64{1, 0, 0, 0}, trips(e))
		require.False(t, r.replies[0].Single || r.replies[1].Single, "committed by the one-trip batch")
		x := waitClosed(t, e, r.res[0].ExecutionID)
		var saw time.Time
		require.NoError(t, json.Unmarshal(x.Output, &saw))
		at := eventTimes(t, b, r.res[0].ExecutionID)
		require.Len(t, at, 2)
		require.True(t, saw.Equal(at[0]) && saw.Equal(at[1]), "the workflow saw %v, its events say %v", saw, at)
		// Behind the transaction's now() (the run's created_at), never after.
		require.False(t, saw.After(x.CreatedAt), "saw %v, the run was created at %v", saw, x.CreatedAt)
		require.Less(t, x.CreatedAt.Sub(saw), maxClockLag)
		// A timer's fire time is counted from the same time.
		var fireAt time.Time
		require.NoError(t, b.pool.QueryRow(ctxT(t), `SELECT fire_at FROM harvest_timers WHERE execution_id = $1`,
			r.res[1].ExecutionID).Scan(&fireAt))
		started := eventTimes(t, b, r.res[1].ExecutionID)[0]
		require.True(t, fireAt.Equal(started.Add(time.Hour)), "fire at %v, started %v", fireAt, started)
	})

	t.Run("ATakenKeyMissesAndTheBatchTakesTwoTrips", func(t *testing.T) {
		t.Parallel()
		b, e := oneTripSetup(t)
		old := start(t, e, StartRequest{WorkflowName: "block", IdempotencyKey: "old"})
		r := runBatch(t, e, StartRequest{WorkflowName: "block", IdempotencyKey: "new"},
			StartRequest{WorkflowName: "block", IdempotencyKey: "old"})
		require.Equal(t, [4]int64{0, 1, 1, 0}, trips(e), "a miss, then two trips")
		require.NoError(t, r.errs[0])
		require.True(t, r.res[0].StartedFresh)
		require.NoError(t, r.errs[1])
		require.True(t, r.res[1].Deduplicated)
		require.Equal(t, old.ExecutionID, r.res[1].ExecutionID)
		require.Equal(t, 2, countRows(t, b, `SELECT count(*) FROM harvest_executions`), "the miss wrote nothing")
		require.Equal(t, 2, countRows(t, b, `SELECT count(*) FROM harvest_start_idempotency`))

		// Replays pause the one-trip path for a while.
		for i := range oneTripPause {
			runBatch(t, e, StartRequest{WorkflowName: "block", IdempotencyKey: uuid.NewString()})
			require.Equal(t, [4]int64{0, int64(i) + 2, 1, 0}, trips(e), "batch %d after the miss", i)
		}
		runBatch(t, e, StartRequest{WorkflowName: "block", IdempotencyKey: uuid.NewString()})
		require.Equal(t, [4]int64{1, oneTripPause + 1, 1, 0}, trips(e), "the pause is over")
	})

	t.Run("AHeldSlotMisses", func(t *testing.T) {
		t.Parallel()
		b, e := oneTripSetup(t)
		prior := start(t, e, StartRequest{WorkflowName: "block", WorkflowID: "order-1"})
		r := runBatch(t, e, StartRequest{WorkflowName: "block", IdempotencyKey: "k1"},
			StartRequest{WorkflowName: "block", WorkflowID: "order-1", IdempotencyKey: "k2", ReusePolicy: ReuseRejectDuplicate})
		require.Equal(t, [4]int64{0, 1, 1, 0}, trips(e))
		require.True(t, r.res[0].StartedFresh)
		var conflict *ConflictError
		require.ErrorAs(t, r.errs[1], &conflict)
		require.Equal(t, prior.ExecutionID.String(), conflict.ExistingExecutionID)
		require.Equal(t, 2, countRows(t, b, `SELECT count(*) FROM harvest_executions`))
		require.Equal(t, int32(oneTripPause), e.in.OneTripPaused.Load())
	})

	t.Run("ARacingSlotMisses", func(t *testing.T) {
		t.Parallel()
		b, e := oneTripSetup(t)
		// A run of workflow id "race" that commits while the batch is in
		// flight: the batch's insert waits for it, then the slot index
		// refuses the batch's run. That is a held slot: a miss, and the
		// two-trip batch finds the holder.
		tx, err := b.pool.Begin(ctxT(t))
		require.NoError(t, err)
		defer func() { _ = tx.Rollback(context.Background()) }()
		racer := NewExecutionID(7)
		_, err = tx.Exec(ctxT(t), `INSERT INTO harvest_executions (execution_id, workflow_name, workflow_id, state)
			VALUES ($1, 'block', 'race', 'RUNNING')`, racer)
		require.NoError(t, err)
		reqs := prepare(t, e, StartRequest{WorkflowName: "block", IdempotencyKey: "r1"},
			StartRequest{WorkflowName: "block", WorkflowID: "race", IdempotencyKey: "r2", ReusePolicy: ReuseRejectDuplicate})
		replies := make(chan []startReply, 1)
		go func() { replies <- e.startBatch(context.Background(), reqs) }()
		eventually(t, "the batch to wait for the racing insert", func() bool {
			return countRows(t, b, `SELECT count(*) FROM pg_stat_activity
				WHERE datname = current_database() AND wait_event_type = 'Lock'`) > 0
		})
		require.NoError(t, tx.Commit(ctxT(t)))
		var out []startReply
		select {
		case out = <-replies:
		case <-ctxT(t).Done():
			t.Fatal("batch did not finish")
		}
		require.Equal(t, [4]int64{0, 1, 1, 0}, trips(e), "a miss, then two trips")
		res, err := e.fromReply(ctxT(t), reqs[0], out[0])
		require.NoError(t, err)
		require.True(t, res.StartedFresh)
		_, err = e.fromReply(ctxT(t), reqs[1], out[1])
		var conflict *ConflictError
		require.ErrorAs(t, err, &conflict)
		require.Equal(t, racer.String(), conflict.ExistingExecutionID)
		require.Equal(t, 2, countRows(t, b, `SELECT count(*) FROM harvest_executions`))
		require.Equal(t, int32(oneTripPause), e.in.OneTripPaused.Load())
	})

	t.Run("ANewRunGivingUpItsSlotMisses", func(t *testing.T) {
		t.Parallel()
		b, e := oneTripSetup(t)
		// No first task gives its slot up today; if one did, the slot
		// index could not check the batch's assumption for it.
		reqs := prepare(t, e, StartRequest{WorkflowName: "block", WorkflowID: "given", IdempotencyKey: "g"})
		err := e.in.SendOneTripGivingUpSlots(ctxT(t), reqs)
		var a *store.ExpectError
		require.ErrorAs(t, err, &a)
		require.Equal(t, expectHolding, a.What)
		require.False(t, taken(a), "no replay: the one-trip path goes on")
		require.Zero(t, countRows(t, b, `SELECT count(*) FROM harvest_start_idempotency`), "nothing written")
	})

	t.Run("ALostLeaseMissesAndTheFenceReportsIt", func(t *testing.T) {
		t.Parallel()
		b, e := oneTripSetup(t)
		// An engine that believes it holds an older epoch, with no loops
		// that could notice before its batch does.
		stale, err := New(b.pool, b.reg, e.cfg)
		require.NoError(t, err)
		stale.epoch.Store(e.Epoch() - 1)
		stale.owning.Store(true)
		setClock(t, b, stale, -500*time.Millisecond)
		r := runBatch(t, stale, StartRequest{WorkflowName: "block", IdempotencyKey: "a"})
		require.Equal(t, [4]int64{0, 1, 1, 0}, trips(stale), "a miss, then the two-trip fence")
		var lost *OwnershipLostError
		require.ErrorAs(t, r.errs[0], &lost)
		require.Equal(t, e.Epoch(), lost.Epoch)
		require.False(t, stale.Owning())
		require.Zero(t, countRows(t, b, `SELECT count(*) FROM harvest_start_idempotency`))
		require.Zero(t, stale.in.OneTripPaused.Load(), "a lost lease is no replay")
	})

	for _, c := range []struct {
		name string
		skew time.Duration
	}{{"AClockAheadMisses", time.Minute}, {"AClockFarBehindMisses", -time.Hour}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b, e := oneTripSetup(t)
			setClock(t, b, e, c.skew)
			r := runBatch(t, e, StartRequest{WorkflowName: "clock", IdempotencyKey: "c"})
			require.Equal(t, [4]int64{0, 1, 1, 0}, trips(e))
			require.NoError(t, r.errs[0])
			x := waitClosed(t, e, r.res[0].ExecutionID)
			var saw time.Time
			require.NoError(t, json.Unmarshal(x.Output, &saw))
			require.True(t, saw.Equal(x.CreatedAt), "two trips stamp the transaction's now(): saw %v, created %v", saw, x.CreatedAt)
			require.True(t, saw.Equal(eventTimes(t, b, x.ExecutionID)[0]))
			require.Zero(t, e.in.OneTripPaused.Load(), "a clock off is no replay")
		})
	}

	t.Run("TheClockIsMeasuredAgainByTwoTrips", func(t *testing.T) {
		t.Parallel()
		b, e := oneTripSetup(t)
		setClock(t, b, e, time.Minute)
		runBatch(t, e, StartRequest{WorkflowName: "block", IdempotencyKey: "a"})
		require.Equal(t, [4]int64{0, 1, 1, 0}, trips(e))
		at, ok := e.clock.At(0)
		require.True(t, ok)
		var db time.Time
		require.NoError(t, b.pool.QueryRow(ctxT(t), `SELECT now()`).Scan(&db))
		require.Less(t, at.Sub(db).Abs(), 10*time.Second, "the two-trip batch's sample set the clock right (it was a minute off)")
	})

	// A start's first task runs in its own goroutine before the batch
	// (prepareEarly); a one-trip batch keeps each task's result and time.
	saw := func(t *testing.T, e *Engine, id uuid.UUID) (time.Time, Execution) {
		t.Helper()
		x := waitClosed(t, e, id)
		var at time.Time
		require.NoError(t, json.Unmarshal(x.Output, &at))
		return at, x
	}
	// keptTimes prepares two early first tasks at clocks half a second
	// apart and runs their batch: each start's time is its own, and
	// neither is the batch's. On a machine slow enough that the prepare
	// outlived earlyStale the batch rightly runs a task again (as in
	// AStaleEarlyTaskRunsAgain); keptTimes checks that and says false.
	keptTimes := func(t *testing.T) bool {
		b, e := oneTripSetup(t)
		reqs := prepare(t, e, StartRequest{WorkflowName: "clock", IdempotencyKey: "x"},
			StartRequest{WorkflowName: "clock", IdempotencyKey: "y"})
		setClock(t, b, e, -800*time.Millisecond)
		e.prepareEarly(ctxT(t), &reqs[0])
		setClock(t, b, e, -300*time.Millisecond)
		e.prepareEarly(ctxT(t), &reqs[1])
		setClock(t, b, e, -100*time.Millisecond)
		for i := range reqs {
			require.True(t, early(reqs[i]).done(), "request %d", i)
		}
		require.Greater(t, early(reqs[1]).at.Sub(early(reqs[0]).at), 300*time.Millisecond)
		replies := e.startBatch(ctxT(t), reqs)
		require.Equal(t, [4]int64{1, 0, 0, 0}, trips(e))
		kept := true
		for i, r := range replies {
			require.NoError(t, r.Err)
			require.False(t, r.Single, "request %d", i)
			require.Equal(t, early(reqs[i]).id, r.Res.ExecutionID, "request %d keeps its early id", i)
			at, x := saw(t, e, r.Res.ExecutionID)
			if !at.Equal(early(reqs[i]).at) {
				require.Greater(t, at.Sub(early(reqs[i]).at), earlyStale, "request %d saw %v, prepared at %v: not stale, so not run again", i, at, early(reqs[i]).at)
				kept = false
			}
			for _, ev := range eventTimes(t, b, x.ExecutionID) {
				require.True(t, ev.Equal(at), "request %d: event at %v, task saw %v", i, ev, at)
			}
		}
		return kept
	}
	t.Run("EarlyFirstTasksKeepTheirTimes", func(t *testing.T) {
		t.Parallel()
		for range 5 {
			if keptTimes(t) {
				return
			}
		}
		t.Fatal("five prepares in a row outlived earlyStale: no batch kept its early times")
	})

	t.Run("AStaleEarlyTaskRunsAgain", func(t *testing.T) {
		t.Parallel()
		b, e := oneTripSetup(t)
		reqs := prepare(t, e, StartRequest{WorkflowName: "clock", IdempotencyKey: "s"})
		setClock(t, b, e, -earlyStale-200*time.Millisecond)
		e.prepareEarly(ctxT(t), &reqs[0])
		require.True(t, early(reqs[0]).done())
		setClock(t, b, e, -100*time.Millisecond)
		replies := e.startBatch(ctxT(t), reqs)
		require.Equal(t, [4]int64{1, 0, 0, 0}, trips(e), "one trip, no miss on the time")
		require.False(t, replies[0].Single)
		require.Equal(t, early(reqs[0]).id, replies[0].Res.ExecutionID)
		at, x := saw(t, e, replies[0].Res.ExecutionID)
		require.Greater(t, at.Sub(early(reqs[0]).at), earlyStale, "the batch ran the task again at its own time")
		require.False(t, at.After(x.CreatedAt))
		require.True(t, eventTimes(t, b, x.ExecutionID)[0].Equal(at))
	})

	t.Run("TwoTripsRunEarlyTasksAgain", func(t *testing.T) {
		t.Parallel()
		b, e := oneTripSetup(t)
		start(t, e, StartRequest{WorkflowName: "block", IdempotencyKey: "old"})
		reqs := prepare(t, e, StartRequest{WorkflowName: "clock", IdempotencyKey: "z"},
			StartRequest{WorkflowName: "block", IdempotencyKey: "old"})
		e.prepareEarly(ctxT(t), &reqs[0])
		require.True(t, early(reqs[0]).done())
		replies := e.startBatch(ctxT(t), reqs)
		require.Equal(t, [4]int64{0, 1, 1, 0}, trips(e), "the taken key made it miss")
		require.NoError(t, replies[0].Err)
		require.Equal(t, early(reqs[0]).id, replies[0].Res.ExecutionID)
		at, x := saw(t, e, replies[0].Res.ExecutionID)
		require.True(t, at.Equal(x.CreatedAt), "stamped with the transaction's now(): saw %v, created %v", at, x.CreatedAt)
		require.False(t, at.Equal(early(reqs[0]).at))
		require.True(t, eventTimes(t, b, x.ExecutionID)[0].Equal(at))
	})

	t.Run("PlacedStartsCommitInOneTrip", func(t *testing.T) {
		t.Parallel()
		b, e := oneTripSetup(t)
		placed := &Placement{Epoch: 4, RoutingKey: "p"}
		r := runBatch(t, e, StartRequest{WorkflowName: "block", IdempotencyKey: "p", Placement: placed})
		require.Equal(t, [4]int64{1, 0, 0, 0}, trips(e))
		require.False(t, r.replies[0].Single)
		require.True(t, r.res[0].StartedFresh)
		require.Equal(t, 1, countRows(t, b, `SELECT count(*) FROM harvest_executions`))
	})

	t.Run("BeforeAnyMeasureTheBatchTakesTwoTrips", func(t *testing.T) {
		t.Parallel()
		_, e := oneTripSetup(t)
		e.clock.Forget()
		r := runBatch(t, e, StartRequest{WorkflowName: "block", IdempotencyKey: "a"})
		require.Equal(t, [4]int64{0, 1, 0, 0}, trips(e), "not even tried")
		require.True(t, r.res[0].StartedFresh)
		require.True(t, e.clock.Measured(), "measured by the first batch")
	})
}

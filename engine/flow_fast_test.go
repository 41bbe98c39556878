package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/internal/metrics"
)

// oneTripLimited is a bundle with the limited workflows and an engine
// whose batches the test drives (one trip when they can: the clock safely
// behind, as in TestOneTripStartBatch).
func oneTripLimited(t *testing.T) (*testBundle, *Engine) {
	t.Helper()
	b, e := gcSetup(t, func(c *Config) { c.LeaseTTL = time.Minute })
	b.registerLimited(t)
	setClock(t, b, e, -500*time.Millisecond)
	return b, e
}

func TestFlowFastPath(t *testing.T) {
	t.Parallel()

	t.Run("AFreeSlotIsTakenInTheStart", func(t *testing.T) {
		t.Parallel()
		b, e := setupLimited(t)
		done := start(t, e, StartRequest{WorkflowName: limitedTwoWF.Name(), Input: raw(t, "complete")})
		require.Equal(t, StateCompleted, done.State, "its first task ran in the start")
		held := start(t, e, StartRequest{WorkflowName: limitedTwoWF.Name(), Input: raw(t, "wait")})
		require.Equal(t, StateRunning, held.State)
		require.False(t, taskDue(t, b, held.ExecutionID), "its first task ran in the start")
		st, err := e.FlowStatus(ctxT(t))
		require.NoError(t, err)
		require.Equal(t, []Occupancy{{WorkflowName: limitedTwoWF.Name(), Running: 1}}, st.Keys)
	})

	t.Run("AStartQueuesBehindAQueuedRun", func(t *testing.T) {
		t.Parallel()
		b, e := setupLimited(t)
		first := holdTheSlot(t, b, e)
		hour := time.Hour
		later := start(t, e, StartRequest{WorkflowName: limitedOneWF.Name(), Delay: &hour})
		require.Equal(t, StateQueued, later.State)
		signalGo(t, e, first, "done")
		waitClosed(t, e, first)
		next := start(t, e, StartRequest{WorkflowName: limitedOneWF.Name()})
		require.Equal(t, StateQueued, next.State, "a free slot, but a run of the key waits: the start queues behind it")
		waitTally(t, b.pool, map[string]int{StateRunning: 1}, next.ExecutionID)
		require.Equal(t, map[string]int{StateQueued: 1}, tally(t, b.pool, later.ExecutionID), "not due yet")
	})

	t.Run("ASingleStartTakesAFreeSlot", func(t *testing.T) {
		t.Parallel()
		b, e := gcSetup(t)
		b.registerLimited(t)
		name := limitedOneWF.Name()
		counts := func() [3]float64 {
			return [3]float64{counterValue(t, metrics.FlowSlots.WithLabelValues(name, "start")),
				counterValue(t, metrics.FlowQueued.WithLabelValues(name)), counterValue(t, metrics.FlowSlots.WithLabelValues(name, "dispatch"))}
		}
		before := counts()
		held := start(t, e, StartRequest{WorkflowName: name})
		require.Equal(t, StateRunning, held.State)
		queued := start(t, e, StartRequest{WorkflowName: name})
		require.Equal(t, StateQueued, queued.State)
		signalGo(t, e, held.ExecutionID, "done")
		waitTally(t, b.pool, map[string]int{StateRunning: 1}, queued.ExecutionID)
		// The dispatcher counts its promotions after their commit, which the
		// tally may see first.
		for i, what := range []string{"slots taken in the start", "runs queued", "slots given by the dispatcher"} {
			eventually(t, what+" counted (other tests count too)", func() bool { return counts()[i]-before[i] >= 1 })
		}
	})

	t.Run("FlowSinceBoundsTheSlot", func(t *testing.T) {
		t.Parallel()
		b, e := setupLimited(t)
		first := holdTheSlot(t, b, e)
		next := startQueued(t, e, 1, StartRequest{WorkflowName: limitedOneWF.Name()})[0]
		since := func(id uuid.UUID) *time.Time {
			var at *time.Time
			require.NoError(t, b.pool.QueryRow(ctxT(t), `SELECT flow_since FROM harvest_executions WHERE execution_id = $1`, id).Scan(&at))
			return at
		}
		require.NotNil(t, since(first), "a slot taken in the start")
		require.Nil(t, since(next), "no slot while queued")
		signalGo(t, e, first, "done")
		waitTally(t, b.pool, map[string]int{StateRunning: 1}, next)
		var closed time.Time
		require.NoError(t, b.pool.QueryRow(ctxT(t), `SELECT completed_at FROM harvest_executions WHERE execution_id = $1`, first).Scan(&closed))
		require.False(t, since(next).Before(closed), "the promoted run's slot begins after the first run closed")
	})

	t.Run("AOneTripBatchTakesFreeSlotsAndQueuesTheRest", func(t *testing.T) {
		t.Parallel()
		b, e := oneTripLimited(t)
		r := runBatch(t, e, StartRequest{WorkflowName: limitedTwoWF.Name()}, StartRequest{WorkflowName: limitedTwoWF.Name()},
			StartRequest{WorkflowName: limitedTwoWF.Name()})
		require.Equal(t, [4]int64{1, 0, 0, 0}, trips(e), "one batch, one trip, no miss")
		require.Equal(t, []string{StateRunning, StateRunning, StateQueued}, []string{r.res[0].State, r.res[1].State, r.res[2].State})
		require.False(t, taskDue(t, b, r.res[0].ExecutionID), "its first task ran in the batch")
	})

	t.Run("AOneTripMissOnAFullKeyQueuesInTwoTrips", func(t *testing.T) {
		t.Parallel()
		_, e := oneTripLimited(t)
		r := runBatch(t, e, StartRequest{WorkflowName: limitedOneWF.Name()})
		require.Equal(t, StateRunning, r.res[0].State)
		r = runBatch(t, e, StartRequest{WorkflowName: limitedOneWF.Name()})
		require.Equal(t, StateQueued, r.res[0].State)
		require.Equal(t, [4]int64{1, 1, 1, 0}, trips(e), "the one-trip batch assumed the slot free and missed")
		r = runBatch(t, e, StartRequest{WorkflowName: limitedOneWF.Name()})
		require.Equal(t, StateQueued, r.res[0].State)
		require.Equal(t, [4]int64{2, 1, 1, 0}, trips(e), "the key found full lately: queued in one trip, no check")
		require.Zero(t, e.in.OneTripPaused.Load(), "a full key is no replay")
	})

	t.Run("AKeysReadWaitsForItsLockAndSeesTheHoldersCommit", func(t *testing.T) {
		t.Parallel()
		b, e := setupLimited(t)
		run := start(t, e, StartRequest{WorkflowName: blockWF.Name()})
		const class, key = 0x4856_464c, "snapshot"
		use := `SELECT running FROM harvest_flow_use($1, $2, $3, '{1}', '{1}')`
		names, keys := []string{blockWF.Name()}, []string{key}
		holder, err := b.pool.Begin(ctxT(t))
		require.NoError(t, err)
		defer func() { _ = holder.Rollback(context.Background()) }()
		var running int64
		require.NoError(t, holder.QueryRow(ctxT(t), use, class, names, keys).Scan(&running))
		require.Zero(t, running)
		got := make(chan int64, 1)
		go func() {
			var n int64 = -1
			_ = b.pool.QueryRow(ctxT(t), use, class, names, keys).Scan(&n)
			got <- n
		}()
		eventually(t, "the second read waits for the key's lock", func() bool {
			var waiting int
			err := b.pool.QueryRow(ctxT(t), `SELECT count(*) FROM pg_stat_activity
				 WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory'
				   AND query LIKE '%harvest_flow_use%'`).Scan(&waiting)
			return err == nil && waiting > 0
		})
		// The holder takes the key's slot and commits.
		_, err = holder.Exec(ctxT(t), `UPDATE harvest_executions SET flow_key = $2 WHERE execution_id = $1`, run.ExecutionID, key)
		require.NoError(t, err)
		require.NoError(t, holder.Commit(ctxT(t)))
		require.Equal(t, int64(1), <-got, "the read after the lock counts the slot the holder committed while it waited")
	})

	t.Run("StartsAndClosesStayWithinTheLimit", func(t *testing.T) {
		t.Parallel()
		b, e := setupLimited(t)
		most := watchRunning(t, b.pool, limitedTwoWF.Name())
		ctx, cancel := context.WithCancel(ctxT(t))
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { // closes whatever runs, as fast as it can
			defer wg.Done()
			for ctx.Err() == nil {
				rows, err := b.pool.Query(ctx, `SELECT execution_id FROM harvest_executions WHERE workflow_name = $1 AND state = 'RUNNING'`,
					limitedTwoWF.Name())
				if err != nil {
					continue
				}
				var ids []uuid.UUID
				for rows.Next() {
					var id uuid.UUID
					if rows.Scan(&id) == nil {
						ids = append(ids, id)
					}
				}
				rows.Close()
				for _, id := range ids {
					_, _ = e.Signal(ctx, SignalRequest{ExecutionID: id, SignalName: goSignal.Name(), Payload: raw(t, "done")})
				}
			}
		}()
		var ids []uuid.UUID
		for range 6 {
			ids = append(ids, startLimited(t, e, 10, StartRequest{WorkflowName: limitedTwoWF.Name()})...)
		}
		for _, id := range ids {
			waitClosed(t, e, id)
		}
		cancel()
		wg.Wait()
		require.LessOrEqual(t, most(), 2, "never more than the limit running")
		require.Equal(t, 2, mostHeldAtOnce(t, b.pool, limitedTwoWF.Name()), "never more than the limit held, however briefly")
	})
}

// The fairness bound at scale: tenant A queues 2,000 runs, then
// tenant B queues 10; B's runs all start before A's 200th (with turns,
// by about A's 11th).
func TestFairnessAtScale(t *testing.T) {
	t.Parallel()
	b, e := setupLimited(t)
	first := holdTheSlot(t, b, e)
	startQueued(t, e, 2000, StartRequest{WorkflowName: limitedOneWF.Name(), Input: raw(t, "complete"), FairnessKey: "A"})
	tenantB := startQueued(t, e, 10, StartRequest{WorkflowName: limitedOneWF.Name(), Input: raw(t, "complete"), FairnessKey: "B"})
	signalGo(t, e, first, "done")
	for _, id := range tenantB {
		waitClosed(t, e, id)
	}
	var closedA int
	require.NoError(t, b.pool.QueryRow(ctxT(t), `SELECT count(*) FROM harvest_executions
		WHERE workflow_name = $1 AND fairness_key = 'A' AND state = 'COMPLETED'`, limitedOneWF.Name()).Scan(&closedA))
	t.Logf("tenant A's runs closed when B's last did: %d", closedA)
	require.Less(t, closedA, 200, "B waited behind A's backlog")
}

// Limits set at run time (Config.Limits) replace the declared ones of
// their names: a workflow declared unlimited is limited, a limited one
// lifted, and an activity paced.
func TestRuntimeLimits(t *testing.T) {
	t.Parallel()
	var rt atomic.Pointer[RuntimeLimits]
	rt.Store(&RuntimeLimits{Workflows: map[string]harvest.ConcurrencyLimit{
		blockWF.Name(): {MaxRunning: 1}, limitedOneWF.Name(): {},
	}})
	b := setup(t)
	b.registerLimited(t)
	e := b.engine(t, func(c *Config) { c.Limits = func() RuntimeLimits { return *rt.Load() } })
	held := start(t, e, StartRequest{WorkflowName: blockWF.Name()})
	require.Equal(t, StateRunning, held.State)
	require.Equal(t, StateQueued, start(t, e, StartRequest{WorkflowName: blockWF.Name()}).State, "limited at run time")
	for range 2 {
		require.Equal(t, StateRunning, start(t, e, StartRequest{WorkflowName: limitedOneWF.Name()}).State, "its declared limit lifted")
	}
	st, err := e.FlowStatus(ctxT(t))
	require.NoError(t, err)
	require.Contains(t, st.Limits, FlowLimit{WorkflowName: blockWF.Name(), MaxRunning: 1})
	require.NotContains(t, st.Limits, FlowLimit{WorkflowName: limitedOneWF.Name(), MaxRunning: 1})

	rt.Store(&RuntimeLimits{}) // the limit removed: the queued run is released
	e.flow.Queued()
	eventually(t, "the queued run released", func() bool {
		return countRows(t, b, `SELECT count(*) FROM harvest_executions WHERE workflow_name = $1 AND state = 'QUEUED'`, blockWF.Name()) == 0
	})
}

// counterValue reads a Prometheus counter.
func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	require.NoError(t, c.Write(&m))
	return m.GetCounter().GetValue()
}

// A child of a limited workflow carries the flow fields of its
// ChildOptions into its start.
func TestChildFlowFields(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.registerLimited(t)
	parent := harvest.NewWorkflow("flow_parent", func(ctx harvest.Context, _ string) (string, error) {
		return limitedOneWF.Execute(ctx, "complete", harvest.ChildOptions{ConcurrencyKey: "kid", Priority: 1, FairnessKey: "family",
			FairnessWeight: 4}).Get(ctx)
	})
	require.NoError(t, b.reg.Register(parent))
	e := b.engine(t)
	run := start(t, e, StartRequest{WorkflowName: parent.Name()})
	require.Equal(t, StateCompleted, waitClosed(t, e, run.ExecutionID).State)
	var (
		key, fairness string
		priority      int
		turn          *int64
	)
	require.NoError(t, b.pool.QueryRow(ctxT(t), `SELECT flow_key, fairness_key, priority, flow_turn FROM harvest_executions
		WHERE workflow_name = $1`, limitedOneWF.Name()).Scan(&key, &fairness, &priority, &turn))
	require.Equal(t, "kid", key)
	require.Equal(t, "family", fairness)
	require.Equal(t, 1, priority)
}

// Continue-as-new hands the slot to the successor: the chain holds one
// slot throughout, and a start behind it waits until the last run closes.
func TestContinueAsNewKeepsTheSlot(t *testing.T) {
	t.Parallel()
	b := setup(t)
	chain := harvest.NewWorkflow("limited_chain", func(ctx harvest.Context, gen int) (string, error) {
		if gen == 0 {
			return "", harvest.ContinueAsNew(ctx, 1)
		}
		return goSignal.Receive(ctx)
	}).WithConcurrency(harvest.ConcurrencyLimit{MaxRunning: 1})
	require.NoError(t, b.reg.Register(chain))
	e := b.engine(t)
	first := start(t, e, StartRequest{WorkflowName: chain.Name(), Input: raw(t, 0)})
	var successor uuid.UUID
	eventually(t, "the successor running", func() bool {
		return b.pool.QueryRow(ctxT(t), `SELECT execution_id FROM harvest_executions WHERE continued_from = $1 AND state = 'RUNNING'`,
			first.ExecutionID).Scan(&successor) == nil
	})
	behind := start(t, e, StartRequest{WorkflowName: chain.Name(), Input: raw(t, 1)})
	require.Equal(t, StateQueued, behind.State, "the successor holds the chain's slot")
	st, err := e.FlowStatus(ctxT(t))
	require.NoError(t, err)
	require.Contains(t, st.Keys, Occupancy{WorkflowName: chain.Name(), Running: 1, Queued: 1})
	signalGo(t, e, successor, "done")
	waitTally(t, b.pool, map[string]int{StateRunning: 1}, behind.ExecutionID)
}

// Runs that were running before their workflow was limited count against
// the limit once the dispatcher adopts them: a start behind them waits.
func TestLimitAdoptsRunningRuns(t *testing.T) {
	t.Parallel()
	var rt atomic.Pointer[RuntimeLimits]
	rt.Store(&RuntimeLimits{})
	b := setup(t)
	e := b.engine(t, func(c *Config) { c.Limits = func() RuntimeLimits { return *rt.Load() } })
	var before []uuid.UUID
	for range 3 {
		before = append(before, start(t, e, StartRequest{WorkflowName: blockWF.Name()}).ExecutionID)
	}
	rt.Store(&RuntimeLimits{Workflows: map[string]harvest.ConcurrencyLimit{blockWF.Name(): {MaxRunning: 2}}})
	e.flow.Queued() // the dispatcher's next look (its poll tick would do as well)
	eventually(t, "the running runs adopted", func() bool {
		return countRows(t, b, `SELECT count(*) FROM harvest_executions WHERE workflow_name = $1 AND flow_key = '' AND state = 'RUNNING'`,
			blockWF.Name()) == 3
	})
	behind := start(t, e, StartRequest{WorkflowName: blockWF.Name()})
	require.Equal(t, StateQueued, behind.State, "three running against a limit of two")
	for _, id := range before[:2] {
		signalGo(t, e, id, "done")
		waitClosed(t, e, id)
	}
	waitTally(t, b.pool, map[string]int{StateRunning: 1}, behind.ExecutionID)
}

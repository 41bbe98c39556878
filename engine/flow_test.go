package engine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
)

// Workflows under concurrency limits. Each waits for a "go" signal and
// returns its payload, unless its input says "complete".
var (
	limitedTwoWF = harvest.NewWorkflow("limited_two", blockOrComplete).
			WithConcurrency(harvest.ConcurrencyLimit{MaxRunning: 2})
	limitedOneWF = harvest.NewWorkflow("limited_one", blockOrComplete).
			WithConcurrency(harvest.ConcurrencyLimit{MaxRunning: 1})
	limitedKeyedWF = harvest.NewWorkflow("limited_keyed", func(ctx harvest.Context, in customerInput) (string, error) {
		return goSignal.Receive(ctx)
	}).WithConcurrency(harvest.ConcurrencyLimit{MaxRunning: 1, KeyPointer: "/customer"})
)

type customerInput struct {
	Customer any `json:"customer"`
}

func blockOrComplete(ctx harvest.Context, in string) (string, error) {
	if in == "complete" {
		return in, nil
	}
	return goSignal.Receive(ctx)
}

func (b *testBundle) registerLimited(t *testing.T) {
	require.NoError(t, b.reg.Register(limitedTwoWF, limitedOneWF, limitedKeyedWF))
}

// setupLimited is setup with the limited workflows, and an engine.
func setupLimited(t *testing.T) (*testBundle, *Engine) {
	b := setup(t)
	b.registerLimited(t)
	return b, b.engine(t)
}

// holdTheSlot starts a run of limited_one that takes its one slot and
// waits for "go".
func holdTheSlot(t *testing.T, b *testBundle, e *Engine) uuid.UUID {
	t.Helper()
	first := startLimited(t, e, 1, StartRequest{WorkflowName: limitedOneWF.Name()})
	waitTally(t, b.pool, map[string]int{StateRunning: 1}, first...)
	return first[0]
}

// runStates reads the states of runs.
func runStates(t *testing.T, pool *pgxpool.Pool, ids ...uuid.UUID) map[uuid.UUID]string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT execution_id, state FROM harvest_executions WHERE execution_id = ANY($1)`, ids)
	require.NoError(t, err)
	out := map[uuid.UUID]string{}
	for rows.Next() {
		var (
			id    uuid.UUID
			state string
		)
		require.NoError(t, rows.Scan(&id, &state))
		out[id] = state
	}
	require.NoError(t, rows.Err())
	return out
}

// tally counts the runs of ids in each state.
func tally(t *testing.T, pool *pgxpool.Pool, ids ...uuid.UUID) map[string]int {
	t.Helper()
	n := map[string]int{}
	for _, s := range runStates(t, pool, ids...) {
		n[s]++
	}
	return n
}

// waitTally waits until the runs of ids are in the states want counts.
func waitTally(t *testing.T, pool *pgxpool.Pool, want map[string]int, ids ...uuid.UUID) {
	t.Helper()
	eventually(t, fmt.Sprintf("states %v", want), func() bool {
		got := tally(t, pool, ids...)
		for s, n := range want {
			if got[s] != n {
				return false
			}
		}
		return true
	})
}

// watchRunning samples how many runs of workflow name are RUNNING until
// stop is called, which returns the most it saw.
func watchRunning(t *testing.T, pool *pgxpool.Pool, name string) (stop func() int) {
	var (
		most atomic.Int64
		done = make(chan struct{})
		wg   sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			var n int64
			if err := pool.QueryRow(context.Background(),
				`SELECT count(*) FROM harvest_executions WHERE workflow_name = $1 AND state = 'RUNNING'`, name).Scan(&n); err == nil && n > most.Load() {
				most.Store(n)
			}
		}
	}()
	return func() int {
		close(done)
		wg.Wait()
		return int(most.Load())
	}
}

// mostHeldAtOnce is the most slots the runs of name held at once, from
// each run's slot interval: from flow_since (the database's clock when it
// took the slot) to completed_at (the start of the transaction that freed
// it, which committed before a later holder could read the slot free, so
// a release sorts before a take at the same instant). Unlike sampling,
// it sees an excess however brief.
func mostHeldAtOnce(t *testing.T, pool *pgxpool.Pool, name string) int {
	t.Helper()
	var most int
	require.NoError(t, pool.QueryRow(ctxT(t), `
		SELECT coalesce(max(held), 0) FROM (
		    SELECT sum(d) OVER (ORDER BY at, d ROWS UNBOUNDED PRECEDING) AS held FROM (
		        SELECT flow_since AS at, 1 AS d FROM harvest_executions WHERE workflow_name = $1 AND flow_since IS NOT NULL
		        UNION ALL
		        SELECT completed_at, -1 FROM harvest_executions
		         WHERE workflow_name = $1 AND flow_since IS NOT NULL AND completed_at IS NOT NULL) e) s`, name).Scan(&most))
	return most
}

func signalGo(t *testing.T, e *Engine, id uuid.UUID, payload string) {
	t.Helper()
	_, err := e.Signal(ctxT(t), SignalRequest{ExecutionID: id, SignalName: goSignal.Name(), Payload: raw(t, payload)})
	require.NoError(t, err)
}

// startLimited starts n runs of req's workflow at once and returns their
// ids; each start answers RUNNING or COMPLETED (it took a free slot) or
// QUEUED.
func startLimited(t *testing.T, e *Engine, n int, req StartRequest) []uuid.UUID {
	t.Helper()
	ids, _ := startAnswers(t, e, n, req)
	return ids
}

// startQueued is startLimited for starts that find no free slot: each
// answers QUEUED.
func startQueued(t *testing.T, e *Engine, n int, req StartRequest) []uuid.UUID {
	t.Helper()
	ids, states := startAnswers(t, e, n, req)
	for i, s := range states {
		require.Equal(t, StateQueued, s, "start %d", i)
	}
	return ids
}

// startAnswers starts n runs of req's workflow at once: their ids and
// the states their starts answered.
func startAnswers(t *testing.T, e *Engine, n int, req StartRequest) ([]uuid.UUID, []string) {
	t.Helper()
	ids, states := make([]uuid.UUID, n), make([]string, n)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := e.StartWorkflow(ctxT(t), req)
			ids[i], states[i], errs[i] = res.ExecutionID, res.State, err
			if err == nil && res.State != StateQueued && res.State != StateRunning && res.State != StateCompleted {
				errs[i] = fmt.Errorf("start %d answered %s", i, res.State)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	return ids, states
}

func TestConcurrencyLimit(t *testing.T) {
	t.Parallel()
	t.Run("NPlusOneStartsRunNAndQueueOne", func(t *testing.T) {
		t.Parallel()
		b, e := setupLimited(t)
		most := watchRunning(t, b.pool, limitedTwoWF.Name())
		ids := startLimited(t, e, 3, StartRequest{WorkflowName: limitedTwoWF.Name()})
		waitTally(t, b.pool, map[string]int{StateRunning: 2, StateQueued: 1}, ids...)
		states := runStates(t, b.pool, ids...)
		var running, queued []uuid.UUID
		for _, id := range ids {
			if states[id] == StateRunning {
				running = append(running, id)
			} else {
				queued = append(queued, id)
			}
		}
		require.Empty(t, eventTypes(t, b.pool, queued[0])[1:], "a queued run's code has not run")
		signalGo(t, e, running[0], "one")
		require.Equal(t, StateCompleted, waitClosed(t, e, running[0]).State)
		waitTally(t, b.pool, map[string]int{StateRunning: 2, StateCompleted: 1}, ids...)
		signalGo(t, e, running[1], "two")
		signalGo(t, e, queued[0], "three")
		x := waitClosed(t, e, queued[0])
		require.JSONEq(t, `"three"`, string(x.Output))
		waitClosed(t, e, running[1])
		require.LessOrEqual(t, most(), 2, "never more than the limit running")
	})

	t.Run("EachKeyHasItsSlots", func(t *testing.T) {
		t.Parallel()
		b, e := setupLimited(t)
		a := startLimited(t, e, 2, StartRequest{WorkflowName: limitedKeyedWF.Name(), Input: raw(t, customerInput{Customer: "a"})})
		num := startLimited(t, e, 1, StartRequest{WorkflowName: limitedKeyedWF.Name(), Input: raw(t, customerInput{Customer: 7})})
		given := startLimited(t, e, 1, StartRequest{WorkflowName: limitedKeyedWF.Name(), Input: raw(t, customerInput{Customer: 7}),
			ConcurrencyKey: "own"})
		waitTally(t, b.pool, map[string]int{StateRunning: 1, StateQueued: 1}, a...)
		waitTally(t, b.pool, map[string]int{StateRunning: 2}, append(num, given...)...)
		st, err := e.FlowStatus(ctxT(t))
		require.NoError(t, err)
		require.Equal(t, []Occupancy{
			{WorkflowName: limitedKeyedWF.Name(), Key: "7", Running: 1},
			{WorkflowName: limitedKeyedWF.Name(), Key: "a", Running: 1, Queued: 1},
			{WorkflowName: limitedKeyedWF.Name(), Key: "own", Running: 1},
		}, st.Keys)
		require.Contains(t, st.Limits, FlowLimit{WorkflowName: limitedKeyedWF.Name(), MaxRunning: 1, KeyPointer: "/customer"})
	})

	t.Run("QueuedRunsCancelAndTerminateAtOnce", func(t *testing.T) {
		t.Parallel()
		b, e := setupLimited(t)
		first := holdTheSlot(t, b, e)
		queued := startQueued(t, e, 2, StartRequest{WorkflowName: limitedOneWF.Name()})
		res, err := e.Cancel(ctxT(t), queued[0], "not needed")
		require.NoError(t, err)
		require.Equal(t, StateCancelled, res.State)
		require.True(t, res.Newly)
		require.Equal(t, []string{string(harvest.EventWorkflowStarted), string(harvest.EventWorkflowCancelled)}, eventTypes(t, b.pool, queued[0]))
		res, err = e.Terminate(ctxT(t), queued[1], "not needed")
		require.NoError(t, err)
		require.Equal(t, StateTerminated, res.State)
		require.Equal(t, map[string]int{StateRunning: 1}, tally(t, b.pool, first))
		st, err := e.FlowStatus(ctxT(t))
		require.NoError(t, err)
		require.Equal(t, []Occupancy{{WorkflowName: limitedOneWF.Name(), Key: "", Running: 1}}, st.Keys)
	})

	t.Run("ASignalWaitsInTheQueuedRunsHistory", func(t *testing.T) {
		t.Parallel()
		b, e := setupLimited(t)
		first := holdTheSlot(t, b, e)
		queued := startQueued(t, e, 1, StartRequest{WorkflowName: limitedOneWF.Name()})
		signalGo(t, e, queued[0], "early")
		require.Equal(t, map[string]int{StateQueued: 1}, tally(t, b.pool, queued...))
		var due *string
		require.NoError(t, b.pool.QueryRow(ctxT(t), `SELECT wf_task_due_at::text FROM harvest_executions WHERE execution_id = $1`,
			queued[0]).Scan(&due))
		require.Nil(t, due, "a signal does not make a queued run's task due")
		signalGo(t, e, first, "first")
		x := waitClosed(t, e, queued[0])
		require.JSONEq(t, `"early"`, string(x.Output))
	})

	t.Run("ASignalWithStartQueuesItsRunWithATurn", func(t *testing.T) {
		t.Parallel()
		b, e := setupLimited(t)
		first := holdTheSlot(t, b, e)
		res, err := e.SignalWithStart(ctxT(t), SignalWithStartRequest{
			Start:      StartRequest{WorkflowName: limitedOneWF.Name(), WorkflowID: "sws-limited", FairnessKey: "t1", Priority: 2},
			SignalName: goSignal.Name(), SignalPayload: raw(t, "carried")})
		require.NoError(t, err)
		require.True(t, res.StartedFresh)
		var (
			state, key, fair string
			prio             int16
			turn             *int64
			since, due       *time.Time
		)
		require.NoError(t, b.pool.QueryRow(ctxT(t), `SELECT state, flow_key, fairness_key, priority, flow_turn, flow_since, wf_task_due_at
			FROM harvest_executions WHERE execution_id = $1`, res.ExecutionID).Scan(&state, &key, &fair, &prio, &turn, &since, &due))
		require.Equal(t, StateQueued, state, "the key's one slot is held")
		require.Equal(t, []any{"", "t1", int16(2)}, []any{key, fair, prio})
		require.NotNil(t, turn, "a queued run takes a turn")
		require.Nil(t, since, "no slot while queued")
		require.Nil(t, due, "no task due while queued")
		signalGo(t, e, first, "done")
		x := waitClosed(t, e, res.ExecutionID)
		require.JSONEq(t, `"carried"`, string(x.Output), "promoted, it received the signal it was started with")
	})

	t.Run("PriorityOrdersTheQueue", func(t *testing.T) {
		t.Parallel()
		b, e := setupLimited(t)
		first := holdTheSlot(t, b, e)
		var order []uuid.UUID
		for _, p := range []int{5, 0, 1} {
			order = append(order, startQueued(t, e, 1, StartRequest{WorkflowName: limitedOneWF.Name(), Priority: p})...)
		}
		prev := first
		for _, next := range []uuid.UUID{order[2], order[1], order[0]} { // 1, then 3 (the default), then 5
			signalGo(t, e, prev, "done")
			waitClosed(t, e, prev)
			waitTally(t, b.pool, map[string]int{StateRunning: 1}, next)
			prev = next
		}
	})

	t.Run("FairnessKeysTakeTurns", func(t *testing.T) {
		t.Parallel()
		b, e := setupLimited(t)
		first := holdTheSlot(t, b, e)
		var tenantA, tenantB []uuid.UUID
		for range 30 {
			tenantA = append(tenantA, start(t, e, StartRequest{WorkflowName: limitedOneWF.Name(), Input: raw(t, "complete"), FairnessKey: "A"}).ExecutionID)
		}
		for range 3 {
			tenantB = append(tenantB, start(t, e, StartRequest{WorkflowName: limitedOneWF.Name(), Input: raw(t, "complete"), FairnessKey: "B"}).ExecutionID)
		}
		signalGo(t, e, first, "done")
		for _, id := range append(tenantA, tenantB...) {
			waitClosed(t, e, id)
		}
		// One slot: runs close in the order they were dispatched.
		rank := completionRanks(t, b.pool, limitedOneWF.Name())
		for i, id := range tenantB {
			require.Less(t, rank[id], 2*(i+1)+1, "B's run %d waited behind A's backlog: ranks %v", i, rank)
		}
	})

	t.Run("WeightsShareTheTurns", func(t *testing.T) {
		t.Parallel()
		b, e := setupLimited(t)
		first := holdTheSlot(t, b, e)
		light := startQueued(t, e, 30, StartRequest{WorkflowName: limitedOneWF.Name(), Input: raw(t, "complete"), FairnessKey: "A"})
		heavy := startQueued(t, e, 30, StartRequest{WorkflowName: limitedOneWF.Name(), Input: raw(t, "complete"), FairnessKey: "B",
			FairnessWeight: 3})
		signalGo(t, e, first, "done")
		for _, id := range append(light, heavy...) {
			waitClosed(t, e, id)
		}
		rank := completionRanks(t, b.pool, limitedOneWF.Name())
		early := 0
		for _, id := range heavy {
			if rank[id] <= 20 { // the first run closed is the one that held the slot
				early++
			}
		}
		require.Equal(t, 15, early, "weight 3 against 1: three of every four turns among the first 20 — ranks %v", rank)
	})

	t.Run("BadFlowFieldsAreInvalidArguments", func(t *testing.T) {
		t.Parallel()
		_, e := setupLimited(t)
		for name, req := range map[string]StartRequest{
			"PriorityTooLow":    {WorkflowName: limitedOneWF.Name(), Priority: -1},
			"PriorityTooHigh":   {WorkflowName: noopWF.Name(), Priority: 6},
			"KeyMissing":        {WorkflowName: limitedKeyedWF.Name(), Input: raw(t, map[string]int{"other": 1})},
			"KeyNotAScalar":     {WorkflowName: limitedKeyedWF.Name(), Input: raw(t, customerInput{Customer: []int{1}})},
			"KeyNull":           {WorkflowName: limitedKeyedWF.Name(), Input: raw(t, customerInput{})},
			"ConcurrencyKeyNUL": {WorkflowName: limitedOneWF.Name(), ConcurrencyKey: "a\x00b"},
			"FairnessKeyLong":   {WorkflowName: limitedOneWF.Name(), FairnessKey: string(make([]byte, MaxFlowKeyBytes+1))},
			"WeightNegative":    {WorkflowName: limitedOneWF.Name(), FairnessWeight: -1},
			"WeightTooHigh":     {WorkflowName: limitedOneWF.Name(), FairnessWeight: harvest.MaxFairnessWeight + 1},
		} {
			_, err := e.StartWorkflow(ctxT(t), req)
			require.ErrorIs(t, err, ErrInvalidArgument, name)
		}
		res := start(t, e, StartRequest{WorkflowName: noopWF.Name(), Input: raw(t, "x"), ConcurrencyKey: "ignored", Priority: 1})
		require.Equal(t, StateCompleted, res.State, "a workflow under no limit ignores the flow fields (its first task ran in the start)")
	})

	t.Run("ManyConcurrentStartsAllRun", func(t *testing.T) {
		t.Parallel()
		b, e := setupLimited(t)
		require.NoError(t, b.reg.Register(benchLimitedWF))
		ids := startLimited(t, e, 300, StartRequest{WorkflowName: benchLimitedWF.Name()})
		waitTally(t, b.pool, map[string]int{StateRunning: len(ids)}, ids...)
	})

	t.Run("AKilledOwnerLeaksNoSlot", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.registerLimited(t)
		e1 := b.engine(t)
		ids := startLimited(t, e1, 3, StartRequest{WorkflowName: limitedTwoWF.Name()})
		waitTally(t, b.pool, map[string]int{StateRunning: 2, StateQueued: 1}, ids...)
		crash(e1)
		e2 := b.engine(t)
		most := watchRunning(t, b.pool, limitedTwoWF.Name())
		for _, id := range ids {
			if runStates(t, b.pool, id)[id] == StateRunning {
				signalGo(t, e2, id, "after")
				waitClosed(t, e2, id)
				break
			}
		}
		waitTally(t, b.pool, map[string]int{StateRunning: 2, StateCompleted: 1}, ids...)
		require.LessOrEqual(t, most(), 2)
	})
}

// completionRanks ranks the closed runs of workflow name by the time
// they closed (0 first).
func completionRanks(t *testing.T, pool *pgxpool.Pool, name string) map[uuid.UUID]int {
	t.Helper()
	rows, err := pool.Query(context.Background(), `
		SELECT execution_id FROM harvest_executions
		 WHERE workflow_name = $1 AND state = 'COMPLETED'
		 ORDER BY completed_at, execution_id`, name)
	require.NoError(t, err)
	ranks := map[uuid.UUID]int{}
	for rows.Next() {
		var id uuid.UUID
		require.NoError(t, rows.Scan(&id))
		ranks[id] = len(ranks)
	}
	require.NoError(t, rows.Err())
	return ranks
}

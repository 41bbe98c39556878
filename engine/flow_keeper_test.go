package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/loop"
	"github.com/harvestd/harvest/internal/flowkeeper"
)

// clusterOneWF is limited to one run at once across the cluster; it
// completes at once.
var clusterOneWF = harvest.NewWorkflow("cluster_one", func(ctx harvest.Context, in string) (string, error) {
	return in, nil
}).WithConcurrency(harvest.ConcurrencyLimit{MaxRunning: 1, Scope: harvest.ScopeCluster})

// keeperCrashPoints are the step boundaries of a slot counted across
// the cluster: the dispatcher's ask, the outbox performing the acquire,
// the grant and the release, the keeper's tasks and the signals.
var keeperCrashPoints = []loop.CrashPoint{crashFlowBeforeCommit, crashOutboxClaimed, crashOutboxPerformed,
	crashOutboxRecord, crashSignal, crashLoaded, crashBeforeCommit, crashCommitted}

// keeperCrashTimes is how many times the test's runs surely meet p:
// three for every point but the dispatcher's, which may ask for the three
// runs in one transaction.
func keeperCrashTimes(p loop.CrashPoint) int32 {
	if p == crashFlowBeforeCommit {
		return 1
	}
	return 3
}

// crashNth is crashOnce at the nth time the engine meets target.
func crashNth(target loop.CrashPoint, n int32, hit, frozen chan struct{}) loop.Crash {
	var met atomic.Int32
	once := crashOnce(target, hit, frozen)
	return func(ctx context.Context, p loop.CrashPoint) error {
		if p == target && met.Add(1) < n {
			return nil
		}
		return once(ctx, p)
	}
}

// TestClusterLimitCrashPoints stops the engine at each boundary of the
// slots of a limit counted across the cluster — the first, second and
// third time it meets it, so that the ask, the acquire, the keeper's
// grant, the run's promotion and the close's release each meet a crash —
// and checks that a successor runs every run exactly once, one at a
// time, and that the keeper ends holding no slot.
func TestClusterLimitCrashPoints(t *testing.T) {
	t.Parallel()
	for _, p := range keeperCrashPoints {
		for n := int32(1); n <= keeperCrashTimes(p); n++ {
			t.Run(fmt.Sprintf("%s#%d", p, n), func(t *testing.T) {
				t.Parallel()
				b := setup(t)
				require.NoError(t, b.reg.Register(clusterOneWF))
				hit, frozen := make(chan struct{}), make(chan struct{})
				e1 := b.engine(t, func(c *Config) { c.crashHook = crashNth(p, n, hit, frozen) })
				var ids []uuid.UUID
				for i := range 3 {
					res := start(t, e1, StartRequest{WorkflowName: clusterOneWF.Name(), Input: raw(t, fmt.Sprint("r", i))})
					require.Equal(t, StateQueued, res.State)
					ids = append(ids, res.ExecutionID)
				}
				select {
				case <-hit:
				case <-time.After(20 * time.Second):
					t.Fatalf("the runs never met %s %d times", p, n)
				}
				crash(e1)
				close(frozen)

				e2 := b.engine(t)
				for _, id := range ids {
					res, err := e2.Result(ctxT(t), id, 20*time.Second)
					require.NoError(t, err)
					require.Equal(t, StateCompleted, res.State)
				}
				requireOneAtATime(t, b, ids)
				eventually(t, "the keeper holds no slot", func() bool {
					s := keeperState(t, e2, clusterOneWF.Name(), "")
					return len(s.Holders) == 0 && len(s.Waiting) == 0
				})
				requireOutboxEmptyEventually(t, b.pool)
			})
		}
	}
}

// requireOneAtATime checks that the runs' slot intervals (flow_since to
// completed_at) do not overlap.
func requireOneAtATime(t *testing.T, b *testBundle, ids []uuid.UUID) {
	t.Helper()
	rows, err := b.pool.Query(ctxT(t), `SELECT flow_since, completed_at FROM harvest_executions
		 WHERE execution_id = ANY($1) ORDER BY flow_since`, ids)
	require.NoError(t, err)
	var last time.Time
	for rows.Next() {
		var since, until time.Time
		require.NoError(t, rows.Scan(&since, &until))
		require.False(t, since.Before(last), "a run took the slot at %s, before the one before it gave it back at %s", since, last)
		last = until
	}
	require.NoError(t, rows.Err())
}

// keeperState queries the state of the keeper of workflow's key.
func keeperState(t *testing.T, e *Engine, workflow, key string) flowkeeper.State {
	t.Helper()
	id, err := selfOutbound{e}.Resolve(ctxT(t), flowkeeper.WorkflowName, flowkeeper.WorkflowID(workflow, key))
	require.NoError(t, err)
	out, err := e.Query(ctxT(t), id, flowkeeper.StateQuery, nil)
	require.NoError(t, err)
	var s flowkeeper.State
	require.NoError(t, json.Unmarshal(out, &s))
	return s
}

// A keeper is Harvest's own: a cancel or a terminate is refused (either would drop
// the key's slots), and it keeps running.
func TestKeeperIsNotClosedByHand(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.reg.Register(clusterOneWF))
	e := b.engine(t)
	run := start(t, e, StartRequest{WorkflowName: clusterOneWF.Name(), Input: raw(t, "r")})
	res, err := e.Result(ctxT(t), run.ExecutionID, 20*time.Second)
	require.NoError(t, err)
	require.Equal(t, StateCompleted, res.State)
	id, err := selfOutbound{e}.Resolve(ctxT(t), flowkeeper.WorkflowName, flowkeeper.WorkflowID(clusterOneWF.Name(), ""))
	require.NoError(t, err)
	_, err = e.Cancel(ctxT(t), id, "tidy up")
	require.ErrorIs(t, err, ErrInvalidArgument)
	_, err = e.Terminate(ctxT(t), id, "tidy up")
	require.ErrorIs(t, err, ErrInvalidArgument, "a keeper's successor would start with no slots")
	d, err := e.Describe(ctxT(t), id)
	require.NoError(t, err)
	require.Equal(t, StateRunning, d.Execution.State)
}

// Runs that were RUNNING before their workflow's limit was counted
// across the cluster are adopted by the key's keeper: they hold its slots
// (over the limit), so a new start waits until they closed below it.
func TestKeeperAdoptsRunningRuns(t *testing.T) {
	t.Parallel()
	var rt atomic.Pointer[RuntimeLimits]
	rt.Store(&RuntimeLimits{})
	b := setup(t)
	e := b.engine(t, func(c *Config) { c.Limits = func() RuntimeLimits { return *rt.Load() } })
	var running []uuid.UUID
	for range 2 {
		res := start(t, e, StartRequest{WorkflowName: blockWF.Name()})
		require.Equal(t, StateRunning, res.State)
		running = append(running, res.ExecutionID)
	}
	rt.Store(&RuntimeLimits{Workflows: map[string]harvest.ConcurrencyLimit{
		blockWF.Name(): {MaxRunning: 1, Scope: harvest.ScopeCluster}}})
	e.flow.Queued()
	late := start(t, e, StartRequest{WorkflowName: blockWF.Name()})
	require.Equal(t, StateQueued, late.State)
	eventually(t, "the keeper counts the two running runs and the new one waits", func() bool {
		if _, err := (selfOutbound{e}).Resolve(ctxT(t), flowkeeper.WorkflowName, flowkeeper.WorkflowID(blockWF.Name(), "")); err != nil {
			return false // not started yet
		}
		s := keeperState(t, e, blockWF.Name(), "")
		return len(s.Holders) == 2 && len(s.Waiting) == 1
	})
	for i, id := range running {
		require.Equal(t, StateQueued, runStates(t, b.pool, late.ExecutionID)[late.ExecutionID], "held back while %d adopted runs run", 2-i)
		_, err := e.Signal(ctxT(t), SignalRequest{ExecutionID: id, SignalName: "go", Payload: raw(t, "done")})
		require.NoError(t, err)
		res, err := e.Result(ctxT(t), id, 20*time.Second)
		require.NoError(t, err)
		require.Equal(t, StateCompleted, res.State)
	}
	eventually(t, "the new run granted once both closed", func() bool {
		return runStates(t, b.pool, late.ExecutionID)[late.ExecutionID] == StateRunning
	})
}

// clusterBlockWF is limited to one run at once across the cluster; its
// runs wait for the go signal.
var clusterBlockWF = harvest.NewWorkflow("cluster_block", func(ctx harvest.Context, _ string) (string, error) {
	return goSignal.Receive(ctx)
}).WithConcurrency(harvest.ConcurrencyLimit{MaxRunning: 1, Scope: harvest.ScopeCluster})

// A queued run's fairness weight reaches its keeper, which takes its
// turn by it (TurnScale / weight), from a start batch's insert and from a
// signal-with-start's.
func TestKeeperCarriesFairnessWeight(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.reg.Register(clusterBlockWF))
	e := b.engine(t)
	start(t, e, StartRequest{WorkflowName: clusterBlockWF.Name(), FairnessKey: "holder"})
	eventually(t, "the first run holds the slot", func() bool {
		_, err := selfOutbound{e}.Resolve(ctxT(t), flowkeeper.WorkflowName, flowkeeper.WorkflowID(clusterBlockWF.Name(), ""))
		return err == nil && len(keeperState(t, e, clusterBlockWF.Name(), "").Holders) == 1
	})
	start(t, e, StartRequest{WorkflowName: clusterBlockWF.Name(), FairnessKey: "heavy", FairnessWeight: 4})
	_, err := e.SignalWithStart(ctxT(t), SignalWithStartRequest{SignalName: goSignal.Name(), SignalPayload: raw(t, "x"),
		Start: StartRequest{WorkflowName: clusterBlockWF.Name(), WorkflowID: "sws", FairnessKey: "medium", FairnessWeight: 2}})
	require.NoError(t, err)
	turns := map[string]int64{}
	eventually(t, "both runs wait at the keeper", func() bool {
		for _, w := range keeperState(t, e, clusterBlockWF.Name(), "").Waiting {
			turns[w.Fairness] = w.Turn
		}
		return len(turns) == 2
	})
	require.Equal(t, map[string]int64{"heavy": flowkeeper.TurnScale / 4, "medium": flowkeeper.TurnScale / 2}, turns)
}

// TestKeeperAdoptionCrashPoints stops the engine at each boundary of an
// adoption (the dispatcher's adopt step, the outbox performing the held
// acquires, the keeper's tasks and signals), the first time it meets it
// once the limit is counted across the cluster, and checks that the
// successor's keeper counts the two running runs once each: a new start
// waits until both closed, and is granted then.
func TestKeeperAdoptionCrashPoints(t *testing.T) {
	t.Parallel()
	for _, p := range keeperCrashPoints {
		t.Run(string(p), func(t *testing.T) {
			t.Parallel()
			var rt atomic.Pointer[RuntimeLimits]
			rt.Store(&RuntimeLimits{})
			limits := func(c *Config) { c.Limits = func() RuntimeLimits { return *rt.Load() } }
			b := setup(t)
			rig := newCrashRig(t, b, once(p), limits)
			e1 := rig.e
			var running []uuid.UUID
			for range 2 {
				res := start(t, e1, StartRequest{WorkflowName: blockWF.Name()})
				require.Equal(t, StateRunning, res.State)
				running = append(running, res.ExecutionID)
			}
			rig.arm()
			rt.Store(&RuntimeLimits{Workflows: map[string]harvest.ConcurrencyLimit{
				blockWF.Name(): {MaxRunning: 1, Scope: harvest.ScopeCluster}}})
			e1.flow.Queued()
			rig.crashAtHit(t, "the adoption at "+string(p))

			e2 := b.engine(t, limits)
			late := start(t, e2, StartRequest{WorkflowName: blockWF.Name()})
			require.Equal(t, StateQueued, late.State)
			eventually(t, "the keeper counts each running run once and the new one waits", func() bool {
				if _, err := (selfOutbound{e2}).Resolve(ctxT(t), flowkeeper.WorkflowName, flowkeeper.WorkflowID(blockWF.Name(), "")); err != nil {
					return false // not started yet
				}
				s := keeperState(t, e2, blockWF.Name(), "")
				return len(s.Holders) == 2 && len(s.Waiting) == 1
			})
			for _, id := range running {
				require.Equal(t, StateQueued, runStates(t, b.pool, late.ExecutionID)[late.ExecutionID])
				_, err := e2.Signal(ctxT(t), SignalRequest{ExecutionID: id, SignalName: "go", Payload: raw(t, "done")})
				require.NoError(t, err)
				res, err := e2.Result(ctxT(t), id, 20*time.Second)
				require.NoError(t, err)
				require.Equal(t, StateCompleted, res.State)
			}
			eventually(t, "the new run granted once both closed", func() bool {
				return runStates(t, b.pool, late.ExecutionID)[late.ExecutionID] == StateRunning
			})
			require.Len(t, keeperState(t, e2, blockWF.Name(), "").Holders, 1, "the new run holds the one slot")
		})
	}
}

package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/internal/batchop"
)

// fakeStripe charges once per idempotency key, as Stripe does: a repeated
// key answers the first charge.
type fakeStripe struct {
	mu      sync.Mutex
	charges map[string]string
	calls   int
}

// charge answers the charge of key.
func (s *fakeStripe) charge(key string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.charges[key] == "" {
		s.charges[key] = fmt.Sprintf("ch_%d", len(s.charges)+1)
	}
	return s.charges[key]
}

// counts are the calls and the distinct charges.
func (s *fakeStripe) counts() (calls, charged int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls, len(s.charges)
}

var shipSig = harvest.NewSignal[string]("ship")

// resetBundle is a bundle with the reset order workflow registered: it
// charges its amount, waits for the ship signal, then labels the parcel
// (an activity too) and returns "charge/label".
type resetBundle struct {
	*testBundle
	e      *Engine
	stripe *fakeStripe
	wf     *harvest.Workflow[int, string]
}

func setupReset(t *testing.T) *resetBundle {
	t.Helper()
	return setupResetWith(t, func(b *testBundle) *Engine { return b.engine(t) })
}

// setupResetWith is setupReset with the engine newEngine makes.
func setupResetWith(t *testing.T, newEngine func(*testBundle) *Engine) *resetBundle {
	t.Helper()
	b := setup(t)
	s := &fakeStripe{charges: map[string]string{}}
	charge := harvest.NewActivity("reset_charge", func(ctx *harvest.ActivityContext, amount int) (string, error) {
		return s.charge(ctx.IdempotencyKey().String()), nil
	})
	label := harvest.NewActivity("reset_label", func(ctx *harvest.ActivityContext, charge string) (string, error) {
		return "label-" + charge, nil
	})
	wf := harvest.NewWorkflow("reset_order", func(ctx harvest.Context, amount int) (string, error) {
		ch, err := charge.Execute(ctx, amount).Get(ctx)
		if err != nil {
			return "", err
		}
		if _, err := shipSig.Receive(ctx); err != nil {
			return "", err
		}
		l, err := label.Execute(ctx, ch).Get(ctx)
		return ch + "/" + l, err
	})
	require.NoError(t, b.reg.Register(charge, label, wf))
	return &resetBundle{testBundle: b, e: newEngine(b), stripe: s, wf: wf}
}

// order starts an order and waits until it waits for its ship signal.
func (b *resetBundle) order(t *testing.T) uuid.UUID {
	t.Helper()
	run := start(t, b.e, StartRequest{WorkflowName: b.wf.Name(), Input: raw(t, 100)})
	eventually(t, "the charge", func() bool {
		return count(eventTypes(t, b.pool, run.ExecutionID), harvest.EventActivityCompleted) == 1
	})
	return run.ExecutionID
}

// ship sends the ship signal, keyed.
func (b *resetBundle) ship(t *testing.T, e *Engine, id uuid.UUID, key string) {
	t.Helper()
	_, err := e.Signal(ctxT(t), SignalRequest{ExecutionID: id, SignalName: shipSig.Name(), Payload: raw(t, "now"), IdempotencyKey: key})
	require.NoError(t, err)
}

// outcome waits for the chain of id to close and returns its output.
func (b *resetBundle) outcome(t *testing.T, id uuid.UUID) (Outcome, string) {
	t.Helper()
	o, err := b.e.Result(ctxT(t), id, 20*time.Second)
	require.NoError(t, err)
	require.Equal(t, StateCompleted, o.State, "last error %q", o.LastError)
	var out string
	require.NoError(t, json.Unmarshal(o.Output, &out))
	return o, out
}

// chainRuns counts the runs of the chain of id.
func (b *resetBundle) chainRuns(t *testing.T, id uuid.UUID) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(), `
		SELECT count(*) FROM harvest_executions
		 WHERE coalesce(chain_id, execution_id) = (SELECT coalesce(chain_id, execution_id) FROM harvest_executions WHERE execution_id = $1)`,
		id).Scan(&n))
	return n
}

func TestReset(t *testing.T) {
	t.Parallel()

	t.Run("AReExecutedChargeCarriesItsKeyAndChargesOnce", func(t *testing.T) {
		t.Parallel()
		b := setupReset(t)
		id := b.order(t)
		b.ship(t, b.e, id, "ship-1")
		_, first := b.outcome(t, id)
		res, err := b.e.Reset(ctxT(t), ResetRequest{ExecutionID: id, Point: ResetFirst, Reason: "fixed the label", IdempotencyKey: "r1"})
		require.NoError(t, err)
		require.True(t, res.Newly)
		require.False(t, res.Terminated, "the run had completed")
		require.Equal(t, id, res.ResetFrom)
		require.Equal(t, id, res.Replaced)
		require.Equal(t, int64(0), res.EventID)
		o, again := b.outcome(t, res.ExecutionID)
		require.Equal(t, res.ExecutionID, o.ExecutionID)
		require.Equal(t, first, again, "the same charge: its key is the one it had")
		calls, charged := b.stripe.counts()
		require.Equal(t, 2, calls, "the charge ran again (the reset point is before it)")
		require.Equal(t, 1, charged, "and charged once")
		follow, out := b.outcome(t, id)
		require.Equal(t, res.ExecutionID, follow.ExecutionID, "the result of the replaced run follows the reset")
		require.Equal(t, first, out)
	})

	t.Run("ARunningRunIsReplacedAndWhatWasPendingRunsOnce", func(t *testing.T) {
		t.Parallel()
		b := setupReset(t)
		id := b.order(t)
		res, err := b.e.Reset(ctxT(t), ResetRequest{ExecutionID: id, EventID: 1, IdempotencyKey: "r1"})
		require.NoError(t, err)
		require.True(t, res.Terminated)
		old := eventTypes(t, b.pool, id)
		require.Equal(t, string(harvest.EventWorkflowTerminated), old[len(old)-1])
		x, err := b.e.GetExecution(ctxT(t), id)
		require.NoError(t, err)
		require.Equal(t, StateTerminated, x.State)
		// Event 1 is the charge's ActivityScheduled: its completion is
		// after the point, so the reset schedules the task again.
		eventually(t, "the charge of the reset run", func() bool {
			return count(eventTypes(t, b.pool, res.ExecutionID), harvest.EventActivityCompleted) == 1
		})
		b.ship(t, b.e, id, "ship-1") // to the replaced run's id: it reaches the new run
		o, out := b.outcome(t, res.ExecutionID)
		require.Equal(t, res.ExecutionID, o.ExecutionID)
		require.Equal(t, "ch_1/label-ch_1", out)
		calls, charged := b.stripe.counts()
		require.Equal(t, 2, calls)
		require.Equal(t, 1, charged)
		require.Equal(t, 2, b.chainRuns(t, id))
	})

	t.Run("SignalsAfterThePointAreAppliedAgainWithTheirKeys", func(t *testing.T) {
		t.Parallel()
		b := setupReset(t)
		id := b.order(t)
		b.ship(t, b.e, id, "ship-1")
		b.outcome(t, id)
		res, err := b.e.Reset(ctxT(t), ResetRequest{ExecutionID: id, Point: ResetLastTask, IdempotencyKey: "r1"})
		require.NoError(t, err)
		_, out := b.outcome(t, res.ExecutionID)
		require.Equal(t, "ch_1/label-ch_1", out)
		types := eventTypes(t, b.pool, res.ExecutionID)
		require.Equal(t, 1, count(types, harvest.EventSignalReceived))
		b.ship(t, b.e, res.ExecutionID, "ship-1")
		require.Equal(t, types, eventTypes(t, b.pool, res.ExecutionID), "a redelivered signal is a duplicate after the reset")
		calls, _ := b.stripe.counts()
		require.Equal(t, 1, calls, "the last task's reset runs no charge again")
	})

	t.Run("ARetriedResetMakesOneRun", func(t *testing.T) {
		t.Parallel()
		b := setupReset(t)
		id := b.order(t)
		first, err := b.e.Reset(ctxT(t), ResetRequest{ExecutionID: id, Point: ResetFirst, IdempotencyKey: "r1"})
		require.NoError(t, err)
		again, err := b.e.Reset(ctxT(t), ResetRequest{ExecutionID: id, Point: ResetLastTask, IdempotencyKey: "r1"})
		require.NoError(t, err)
		require.False(t, again.Newly)
		first.Newly = false
		require.Equal(t, first, again, "a retry answers what the reset did, terminated included")
		require.Equal(t, 2, b.chainRuns(t, id))
		other, err := b.e.Reset(ctxT(t), ResetRequest{ExecutionID: first.ExecutionID, Point: ResetFirst, IdempotencyKey: "r2"})
		require.NoError(t, err)
		require.Equal(t, first.ExecutionID, other.Replaced)
		require.Equal(t, 3, b.chainRuns(t, id))
	})

	t.Run("BadPointsAreRefused", func(t *testing.T) {
		t.Parallel()
		b := setupReset(t)
		id := b.order(t)
		b.ship(t, b.e, id, "ship-1")
		b.outcome(t, id)
		n := int64(len(eventTypes(t, b.pool, id)))
		for _, req := range []ResetRequest{{EventID: n}, {EventID: -1}, {EventID: n - 1}, {Point: "middle"}} {
			req.ExecutionID = id
			_, err := b.e.Reset(ctxT(t), req)
			require.ErrorIs(t, err, ErrInvalidArgument, "%+v", req)
		}
		_, err := b.e.Reset(ctxT(t), ResetRequest{ExecutionID: uuid.New(), Point: ResetFirst})
		require.ErrorIs(t, err, ErrNotFound)
		require.Equal(t, 1, b.chainRuns(t, id), "nothing was written")
	})

	t.Run("AClosedRunWhoseIDAnotherRunHoldsIsAConflict", func(t *testing.T) {
		t.Parallel()
		b := setupReset(t)
		run := start(t, b.e, StartRequest{WorkflowName: b.wf.Name(), WorkflowID: "order-9", Input: raw(t, 1)})
		_, err := b.e.Terminate(ctxT(t), run.ExecutionID, "gone")
		require.NoError(t, err)
		next := start(t, b.e, StartRequest{WorkflowName: b.wf.Name(), WorkflowID: "order-9", Input: raw(t, 2)})
		_, err = b.e.Reset(ctxT(t), ResetRequest{ExecutionID: run.ExecutionID, Point: ResetFirst})
		var conflict *ConflictError
		require.ErrorAs(t, err, &conflict)
		require.Equal(t, next.ExecutionID.String(), conflict.ExistingExecutionID)
	})
}

// TestBatchReset resets every running order with a batch job: each run is
// replaced once (a retried job finds the same job), and every charge the
// resets re-execute carries its key.
func TestBatchReset(t *testing.T) {
	t.Parallel()
	b := setupReset(t)
	const n = 7
	for range n {
		b.order(t)
	}
	now := time.Now()
	// StartedBefore keeps the resets' own new runs out of the job (the
	// API sets it to the job's creation when it is not given).
	job := batchop.Job{Operation: batchop.Reset, ResetPoint: ResetFirst, Reason: "new charge code",
		Filter: batchop.Filter{WorkflowName: b.wf.Name(), States: []string{StateRunning}, StartedBefore: &now}, Rate: 1000, Size: 3}
	id := startBatch(t, b.e, "resets", job).ExecutionID
	require.Equal(t, batchop.Progress{Matched: n, Done: n, Pages: 3, Finished: true}, batchResult(t, b.e, id))
	require.Equal(t, id, startBatch(t, b.e, "resets", job).ExecutionID)
	require.Equal(t, map[string]int{StateTerminated: n, StateRunning: n}, stateCounts(t, b.testBundle, b.wf.Name()))
	eventually(t, "the re-executed charges", func() bool {
		calls, _ := b.stripe.counts()
		return calls == 2*n
	})
	_, charged := b.stripe.counts()
	require.Equal(t, n, charged, "each order charged once")
}

// TestResetKeepsUpdateIDs: an update id answered before a reset answers
// the same after it (the chain's first UpdateCompleted), though the reset
// run applied the update again (its handler ran again, its activity
// under the key it had); a new id is applied by the reset run.
func TestResetKeepsUpdateIDs(t *testing.T) {
	t.Parallel()
	b, e := setupUpdates(t)
	run := start(t, e, StartRequest{WorkflowName: tallyWF.Name(), Input: raw(t, false)})
	first, err := sendUpdate(t, e, run.ExecutionID, "u1", 3)
	require.NoError(t, err)
	res, err := e.Reset(ctxT(t), ResetRequest{ExecutionID: run.ExecutionID, Point: ResetFirst, IdempotencyKey: "r1"})
	require.NoError(t, err)
	again, err := sendUpdate(t, e, run.ExecutionID, "u1", 50)
	require.NoError(t, err)
	require.Equal(t, first.Output, again.Output, "a retried id gets its first answer across the reset")
	eventually(t, "the update applied again by the reset run", func() bool {
		return countType(t, b, res.ExecutionID, harvest.EventUpdateCompleted) == 1
	})
	next, err := sendUpdate(t, e, run.ExecutionID, "u2", 1)
	require.NoError(t, err)
	require.JSONEq(t, "8", string(next.Output), "the reset run's total: 6 from u1 applied again, then 2")
	require.Equal(t, res.ExecutionID, next.ExecutionID)
}

// TestResetAParentKeepsItsChild resets a parent whose child runs: the
// reset run starts the child again under the key it had, which finds
// the running child; the replaced parent's close applies no close policy
// (the child keeps running), and the child's result reaches the reset
// run.
func TestResetAParentKeepsItsChild(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.registerOutboxWorkflows(t)
	e := b.engine(t)
	parent := start(t, e, StartRequest{WorkflowName: parentWF.Name(), Input: raw(t, parentInput{Child: "block"})})
	var child uuid.UUID
	eventually(t, "the child's start", func() bool {
		ch, err := e.Children(ctxT(t), parent.ExecutionID)
		if err != nil || len(ch) == 0 || ch[0].ExecutionID == nil {
			return false
		}
		child = *ch[0].ExecutionID
		return true
	})
	res, err := e.Reset(ctxT(t), ResetRequest{ExecutionID: parent.ExecutionID, Point: ResetFirst, IdempotencyKey: "r1"})
	require.NoError(t, err)
	require.True(t, res.Terminated)
	eventually(t, "the reset run's child start", func() bool {
		return count(eventTypes(t, b.pool, res.ExecutionID), harvest.EventChildWorkflowStarted) == 1
	})
	x, err := e.GetExecution(ctxT(t), child)
	require.NoError(t, err)
	require.Equal(t, StateRunning, x.State, "the replaced parent's close policy did not terminate the child")
	_, err = e.Signal(ctxT(t), SignalRequest{ExecutionID: child, SignalName: goSignal.Name(), Payload: raw(t, "from the child")})
	require.NoError(t, err)
	out := waitClosed(t, e, res.ExecutionID)
	require.Equal(t, StateCompleted, out.State)
	require.JSONEq(t, `"from the child"`, string(out.Output))
	n, err := e.Children(ctxT(t), res.ExecutionID)
	require.NoError(t, err)
	require.Len(t, n, 1)
	require.Equal(t, child, *n[0].ExecutionID, "the same child")
}

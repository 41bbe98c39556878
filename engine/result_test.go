package engine

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/runs"
)

// A close committed by a batch hands its outcome, as stored, to the
// waiters of its run's result: they need no read after the close.
func TestResultHandOver(t *testing.T) {
	t.Parallel()

	// setupPair registers "gated_pair": the gated activity once, then the
	// run returns its output twice — a JSON array whose stored text
	// (jsonb's, `["x", "x"]`) differs from Go's encoding (`["x","x"]`).
	setupPair := func(t *testing.T) (*testBundle, *gate, *Engine) {
		b := setup(t)
		g := newGate()
		g.register(t, b)
		act := g.activity()
		require.NoError(t, b.reg.Register(harvest.NewWorkflow("gated_pair", func(ctx harvest.Context, in string) ([]string, error) {
			v, err := act.Execute(ctx, in).Get(ctx)
			return []string{v, v}, err
		})))
		return b, g, b.engine(t)
	}
	stored := func(t *testing.T, e *Engine, id uuid.UUID) Outcome {
		x, err := e.GetExecution(ctxT(t), id)
		require.NoError(t, err)
		return Outcome{ExecutionID: id, State: x.State, Output: x.Output, Error: x.Error, CompletedAt: x.CompletedAt}
	}
	handedOver := func(t *testing.T, w *runs.Wait) Outcome {
		t.Helper()
		select {
		case <-w.Closed():
		case <-time.After(20 * time.Second):
			t.Fatal("the run did not close")
		}
		o, ok := w.Outcome()
		require.True(t, ok, "the close handed its outcome over")
		return o
	}

	t.Run("CompletionBatchHandsTheStoredOutcomeOver", func(t *testing.T) {
		t.Parallel()
		_, g, e := setupPair(t)
		res := start(t, e, StartRequest{WorkflowName: "gated_pair", Input: raw(t, "x")})
		g.waitEntered(t)
		w := e.closed.WaitFor(res.ExecutionID)
		defer w.Release()
		g.pass <- struct{}{}
		o := handedOver(t, w)
		require.Equal(t, StateCompleted, o.State)
		require.Equal(t, `["x", "x"]`, string(o.Output), "jsonb's text, as a read returns it")
		require.NotNil(t, o.CompletedAt)
		require.Equal(t, stored(t, e, res.ExecutionID), o)
	})

	t.Run("WorkflowTaskHandsTheStoredOutcomeOver", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := b.engine(t)
		res := start(t, e, StartRequest{WorkflowName: "collect"})
		w := e.closed.WaitFor(res.ExecutionID)
		defer w.Release()
		for _, v := range []string{"a", "stop"} {
			_, err := e.Signal(ctxT(t), SignalRequest{ExecutionID: res.ExecutionID, SignalName: "item", Payload: raw(t, v)})
			require.NoError(t, err)
		}
		o := handedOver(t, w)
		require.Equal(t, StateCompleted, o.State)
		require.Equal(t, stored(t, e, res.ExecutionID), o)
	})

	t.Run("FailedRunHandsItsErrorOver", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := b.engine(t)
		delay := 500 * time.Millisecond // left to the workflow loop, not run by the start
		res := start(t, e, StartRequest{WorkflowName: "block", Delay: &delay, Input: raw(t, "fail")})
		w := e.closed.WaitFor(res.ExecutionID)
		defer w.Release()
		o := handedOver(t, w)
		require.Equal(t, StateFailed, o.State)
		require.NotEmpty(t, o.Error)
		require.Equal(t, stored(t, e, res.ExecutionID), o)
	})

	t.Run("ResultWaitingAtTheCloseAnswersWithTheOutcome", func(t *testing.T) {
		t.Parallel()
		_, g, e := setupPair(t)
		res := start(t, e, StartRequest{WorkflowName: "gated_pair", Input: raw(t, "y")})
		g.waitEntered(t)
		type answer struct {
			o   Outcome
			err error
		}
		got := make(chan answer, 1)
		go func() {
			o, err := e.Result(context.Background(), res.ExecutionID, 20*time.Second)
			got <- answer{o, err}
		}()
		require.Eventually(t, func() bool {
			return e.closed.Waiters(res.ExecutionID) > 0
		}, 20*time.Second, 5*time.Millisecond, "Result waits for the close")
		g.pass <- struct{}{}
		a := <-got
		require.NoError(t, a.err)
		require.Equal(t, `["y", "y"]`, string(a.o.Output))
		require.Equal(t, stored(t, e, res.ExecutionID), a.o)
	})

	t.Run("RunningRunAnswersWithItsState", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := b.engine(t)
		res := start(t, e, StartRequest{WorkflowName: "block"})
		o, err := e.Result(ctxT(t), res.ExecutionID, 30*time.Millisecond)
		require.NoError(t, err)
		require.Equal(t, Outcome{ExecutionID: res.ExecutionID, State: StateRunning}, o)
		_, err = e.Result(ctxT(t), NewExecutionID(7), 0)
		require.ErrorIs(t, err, ErrNotFound)
	})

	t.Run("FreshRunIsKnownOpenUntilItCloses", func(t *testing.T) {
		t.Parallel()
		_, g, e := setupPair(t)
		res := start(t, e, StartRequest{WorkflowName: "gated_pair", Input: raw(t, "z")})
		w := e.closed.WaitFor(res.ExecutionID)
		defer w.Release()
		require.True(t, w.KnownOpen, "the start batch recorded its open run")
		g.waitEntered(t)
		g.pass <- struct{}{}
		handedOver(t, w)
		after := e.closed.WaitFor(res.ExecutionID)
		defer after.Release()
		require.False(t, after.KnownOpen, "the close dropped it")

		done := start(t, e, StartRequest{WorkflowName: "noop"})
		require.Equal(t, StateCompleted, done.State)
		wd := e.closed.WaitFor(done.ExecutionID)
		defer wd.Release()
		require.False(t, wd.KnownOpen, "a run closed by its start is not open")
	})

	t.Run("StoppedEngineForgetsItsOpenRuns", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := b.engine(t)
		res := start(t, e, StartRequest{WorkflowName: "block"})
		e.Stop()
		w := e.closed.WaitFor(res.ExecutionID)
		defer w.Release()
		require.False(t, w.KnownOpen, "closes may commit on the next owner")
		o, err := e.Result(ctxT(t), res.ExecutionID, 0)
		require.NoError(t, err)
		require.Equal(t, StateRunning, o.State)
	})
}

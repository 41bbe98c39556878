package engine

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
)

var (
	addUpd = harvest.NewUpdate[int, int]("add")
	// holdUpd's handler answers the next item signal's payload.
	holdUpd = harvest.NewUpdate[struct{}, string]("hold")
	// twice is the activity an add update's handler runs.
	twice = harvest.NewActivity("twice_updates", func(_ *harvest.ActivityContext, n int) (int, error) { return 2 * n, nil })
	// tallyWF adds twice the n of each add update to its total, which its
	// validator keeps from going down; go continues it as new (input
	// true) or ends it (false).
	tallyWF = harvest.NewWorkflow("tally_updates", func(ctx harvest.Context, again bool) (int, error) {
		total := 0
		addUpd.SetHandler(ctx, func(ctx harvest.Context, n int) (int, error) {
			d, err := twice.Execute(ctx, n).Get(ctx)
			total += d
			return total, err
		}, func(n int) error {
			if n < 0 {
				return errors.New("the total only goes up")
			}
			return nil
		})
		holdUpd.SetHandler(ctx, func(ctx harvest.Context, _ struct{}) (string, error) {
			return itemSig.Receive(ctx)
		}, nil)
		if _, err := goSignal.Receive(ctx); err != nil {
			return 0, err
		}
		if again {
			return 0, harvest.ContinueAsNew(ctx, false)
		}
		return total, nil
	})
)

// setupUpdates is setup with tallyWF registered, and an engine.
func setupUpdates(t *testing.T) (*testBundle, *Engine) {
	t.Helper()
	b := setup(t)
	require.NoError(t, b.reg.Register(twice, tallyWF))
	return b, b.engine(t)
}

// sendUpdate sends an add update and waits up to 20 s for its answer.
func sendUpdate(t *testing.T, e *Engine, id uuid.UUID, updateID string, n int) (UpdateResult, error) {
	t.Helper()
	return e.Update(ctxT(t), UpdateRequest{ExecutionID: id, Name: addUpd.Name(), UpdateID: updateID, Args: raw(t, n),
		Wait: 20 * time.Second})
}

// countType counts the run's events of type typ.
func countType(t *testing.T, b *testBundle, id uuid.UUID, typ harvest.EventType) int {
	return len(slices.DeleteFunc(eventTypes(t, b.pool, id), func(s string) bool { return s != string(typ) }))
}

func TestUpdate(t *testing.T) {
	t.Parallel()

	t.Run("AnUpdateIsAnsweredOnce", func(t *testing.T) {
		t.Parallel()
		b, e := setupUpdates(t)
		run := start(t, e, StartRequest{WorkflowName: tallyWF.Name(), Input: raw(t, false)})
		res, err := sendUpdate(t, e, run.ExecutionID, "first", 3)
		require.NoError(t, err)
		require.True(t, res.Completed)
		require.JSONEq(t, "6", string(res.Output))
		again, err := sendUpdate(t, e, run.ExecutionID, "first", 50)
		require.NoError(t, err)
		require.Equal(t, res, again, "a retried id gets the first answer")
		next, err := sendUpdate(t, e, run.ExecutionID, "second", 1)
		require.NoError(t, err)
		require.JSONEq(t, "8", string(next.Output))
		require.Equal(t, 2, countType(t, b, run.ExecutionID, harvest.EventUpdateCompleted))
		require.Equal(t, 2, countType(t, b, run.ExecutionID, harvest.EventActivityScheduled), "each handler ran once")
	})

	t.Run("ARefusedUpdateWritesNothing", func(t *testing.T) {
		t.Parallel()
		b, e := setupUpdates(t)
		run := start(t, e, StartRequest{WorkflowName: tallyWF.Name(), Input: raw(t, false)})
		before := eventTypes(t, b.pool, run.ExecutionID)
		_, err := sendUpdate(t, e, run.ExecutionID, "down", -1)
		require.ErrorIs(t, err, harvest.ErrUpdateRejected)
		_, err = e.Update(ctxT(t), UpdateRequest{ExecutionID: run.ExecutionID, Name: "nope", UpdateID: "u", Wait: time.Second})
		require.ErrorIs(t, err, harvest.ErrUnknownUpdate)
		_, err = e.Update(ctxT(t), UpdateRequest{ExecutionID: run.ExecutionID, Name: addUpd.Name(), UpdateID: "u",
			Args: raw(t, "two"), Wait: time.Second})
		require.ErrorIs(t, err, harvest.ErrUpdateArgs)
		require.Equal(t, before, eventTypes(t, b.pool, run.ExecutionID))
	})

	t.Run("AClosedRunAnswersItsUpdatesAndRefusesNewOnes", func(t *testing.T) {
		t.Parallel()
		_, e := setupUpdates(t)
		run := start(t, e, StartRequest{WorkflowName: tallyWF.Name(), Input: raw(t, false)})
		res, err := sendUpdate(t, e, run.ExecutionID, "before", 2)
		require.NoError(t, err)
		_, err = e.Signal(ctxT(t), SignalRequest{ExecutionID: run.ExecutionID, SignalName: goSignal.Name(), Payload: raw(t, "end")})
		require.NoError(t, err)
		_, err = e.Result(ctxT(t), run.ExecutionID, 20*time.Second)
		require.NoError(t, err)
		again, err := sendUpdate(t, e, run.ExecutionID, "before", 2)
		require.NoError(t, err)
		require.Equal(t, res, again)
		_, err = sendUpdate(t, e, run.ExecutionID, "after", 2)
		var terminal *TerminalError
		require.ErrorAs(t, err, &terminal)
	})

	t.Run("AnIDIsAnsweredAcrossAContinueAsNew", func(t *testing.T) {
		t.Parallel()
		b, e := setupUpdates(t)
		run := start(t, e, StartRequest{WorkflowName: tallyWF.Name(), Input: raw(t, true)})
		res, err := sendUpdate(t, e, run.ExecutionID, "kept", 4)
		require.NoError(t, err)
		_, err = e.Signal(ctxT(t), SignalRequest{ExecutionID: run.ExecutionID, SignalName: goSignal.Name(), Payload: raw(t, "next")})
		require.NoError(t, err)
		var next uuid.UUID
		eventually(t, "the run continued as new", func() bool {
			x, err := e.GetExecution(ctxT(t), run.ExecutionID)
			if err != nil || x.ContinuedTo == nil {
				return false
			}
			next = *x.ContinuedTo
			return true
		})
		again, err := sendUpdate(t, e, next, "kept", 9)
		require.NoError(t, err)
		require.Equal(t, res, again, "the successor answers the id from its chain")
		fresh, err := sendUpdate(t, e, next, "fresh", 1)
		require.NoError(t, err)
		require.JSONEq(t, "2", string(fresh.Output), "the successor's total starts again")
		require.Zero(t, countType(t, b, next, harvest.EventActivityScheduled)-1)
	})

	t.Run("AnUnansweredUpdateIsPendingThenAnswered", func(t *testing.T) {
		t.Parallel()
		b, e := setupUpdates(t)
		run := start(t, e, StartRequest{WorkflowName: tallyWF.Name(), Input: raw(t, false)})
		hold := func(wait time.Duration) (UpdateResult, error) {
			return e.Update(ctxT(t), UpdateRequest{ExecutionID: run.ExecutionID, Name: holdUpd.Name(), UpdateID: "held", Wait: wait})
		}
		res, err := hold(100 * time.Millisecond)
		require.NoError(t, err)
		require.False(t, res.Completed, "its handler waits for an item: accepted, not answered")
		require.Equal(t, run.ExecutionID, res.ExecutionID)
		res, err = hold(0)
		require.NoError(t, err)
		require.False(t, res.Completed, "a retry of the accepted id is pending too")
		require.Zero(t, countType(t, b, run.ExecutionID, harvest.EventUpdateCompleted))
		_, err = e.Signal(ctxT(t), SignalRequest{ExecutionID: run.ExecutionID, SignalName: itemSig.Name(), Payload: raw(t, "now")})
		require.NoError(t, err)
		res, err = hold(20 * time.Second)
		require.NoError(t, err)
		require.True(t, res.Completed)
		require.JSONEq(t, `"now"`, string(res.Output))
		require.Equal(t, 1, countType(t, b, run.ExecutionID, harvest.EventUpdateCompleted), "accepted once, however often asked")
	})
}

// BenchmarkUpdate: sequential updates of one run, each answered after its
// handler's activity (validation, acceptance, the handler's two workflow
// tasks and its activity, the answer's lookup), with the default poll
// interval (1 s: a waiting request looks sooner).
func BenchmarkUpdate(b *testing.B) {
	bundle := setup(b)
	require.NoError(b, bundle.reg.Register(twice, tallyWF))
	e := bundle.engine(b, func(c *Config) { c.PollInterval = PollIntervalDefault })
	run := start(b, e, StartRequest{WorkflowName: tallyWF.Name(), Input: raw(b, false)})
	b.ResetTimer()
	for i := range b.N {
		res, err := e.Update(ctxT(b), UpdateRequest{ExecutionID: run.ExecutionID, Name: addUpd.Name(),
			UpdateID: fmt.Sprint("u", i), Args: raw(b, 1), Wait: 20 * time.Second})
		require.NoError(b, err)
		require.True(b, res.Completed)
	}
}

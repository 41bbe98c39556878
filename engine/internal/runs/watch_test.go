package runs

import (
	"testing"

	"github.com/google/uuid"
	"github.com/harvestd/harvest/engine/shardapi"
	"github.com/stretchr/testify/require"
)

func TestCloseWatch(t *testing.T) {
	t.Parallel()
	closedNow := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}

	t.Run("CloseWakesOnlyItsOwnWaiters", func(t *testing.T) {
		t.Parallel()
		w := NewWatch()
		a, b := uuid.New(), uuid.New()
		a1, a2, wb := w.WaitFor(a), w.WaitFor(a), w.WaitFor(b)
		defer a1.Release()
		defer a2.Release()
		defer wb.Release()
		w.Fire(a)
		require.True(t, closedNow(a1.Closed()))
		require.True(t, closedNow(a2.Closed()))
		_, ok := a1.Outcome()
		require.False(t, ok, "fire hands no outcome over")
		require.False(t, closedNow(wb.Closed()), "another run's close does not wake b")
	})

	t.Run("ReleasedWaitersLeaveNothingBehind", func(t *testing.T) {
		t.Parallel()
		w := NewWatch()
		id := uuid.New()
		w1, w2 := w.WaitFor(id), w.WaitFor(id)
		w1.Release()
		require.Len(t, w.runs, 1, "one waiter left")
		w2.Release()
		require.Empty(t, w.runs)
		w3 := w.WaitFor(id)
		w.Fire(id)
		w3.Release() // after the fire: must not touch a newer waiter set
		require.True(t, closedNow(w3.Closed()))
		require.Empty(t, w.runs)
	})

	t.Run("OutcomesReachTheirOwnWaiters", func(t *testing.T) {
		t.Parallel()
		w := NewWatch()
		a, b, c := uuid.New(), uuid.New(), uuid.New()
		wa, wb, wc := w.WaitFor(a), w.WaitFor(b), w.WaitFor(c)
		defer wa.Release()
		defer wb.Release()
		defer wc.Release()
		outA := shardapi.Outcome{State: shardapi.StateCompleted, Output: []byte(`{"a": 1}`)}
		w.FireWith(map[uuid.UUID]shardapi.Outcome{a: outA, c: {State: shardapi.StateFailed}}, a, b)
		require.True(t, closedNow(wa.Closed()))
		o, ok := wa.Outcome()
		require.True(t, ok)
		require.Equal(t, outA, o)
		require.True(t, closedNow(wb.Closed()))
		_, ok = wb.Outcome()
		require.False(t, ok, "b closed without an outcome: its waiter reads the run")
		require.False(t, closedNow(wc.Closed()), "an outcome alone does not close c")
	})

	t.Run("OpenRunsAreKnownUntilTheyClose", func(t *testing.T) {
		t.Parallel()
		w := NewWatch()
		a, b := uuid.New(), uuid.New()
		w.Opened(a)
		wa, wb := w.WaitFor(a), w.WaitFor(b)
		defer wa.Release()
		defer wb.Release()
		require.True(t, wa.KnownOpen)
		require.False(t, wb.KnownOpen, "b was never created open here")
		w.Fire(a)
		again := w.WaitFor(a)
		defer again.Release()
		require.False(t, again.KnownOpen, "a closed: a new waiter reads it")
	})

	t.Run("AFailedCommitUnopensItsRuns", func(t *testing.T) {
		t.Parallel()
		w := NewWatch()
		a, b := uuid.New(), uuid.New()
		w.Opened(a, b)
		w.Unopened(a)
		wa, wb := w.WaitFor(a), w.WaitFor(b)
		defer wa.Release()
		defer wb.Release()
		require.False(t, wa.KnownOpen)
		require.True(t, wb.KnownOpen)
	})

	t.Run("ForgetDropsEveryOpenRun", func(t *testing.T) {
		t.Parallel()
		w := NewWatch()
		a := uuid.New()
		w.Opened(a)
		w.Forget()
		wa := w.WaitFor(a)
		defer wa.Release()
		require.False(t, wa.KnownOpen)
	})

	t.Run("OpenRunsAreBoundedByTwoGenerations", func(t *testing.T) {
		t.Parallel()
		w := NewWatch()
		ids := make([]uuid.UUID, 2*openGeneration+1)
		for i := range ids {
			ids[i] = uuid.New()
		}
		w.Opened(ids...)
		require.LessOrEqual(t, w.open.Len(), 2*openGeneration)
		oldest, newest := w.WaitFor(ids[0]), w.WaitFor(ids[len(ids)-1])
		defer oldest.Release()
		defer newest.Release()
		require.False(t, oldest.KnownOpen, "the oldest generation is dropped")
		require.True(t, newest.KnownOpen)
		prev := w.WaitFor(ids[openGeneration+1])
		defer prev.Release()
		require.True(t, prev.KnownOpen, "the previous generation is still known")
	})
}

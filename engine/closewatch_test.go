package engine

import (
	"testing"

	"github.com/google/uuid"
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
		w := newCloseWatch()
		a, b := uuid.New(), uuid.New()
		a1, a2, wb := w.waitFor(a), w.waitFor(a), w.waitFor(b)
		defer a1.release()
		defer a2.release()
		defer wb.release()
		w.fire(a)
		require.True(t, closedNow(a1.closed()))
		require.True(t, closedNow(a2.closed()))
		_, ok := a1.outcome()
		require.False(t, ok, "fire hands no outcome over")
		require.False(t, closedNow(wb.closed()), "another run's close does not wake b")
	})

	t.Run("ReleasedWaitersLeaveNothingBehind", func(t *testing.T) {
		t.Parallel()
		w := newCloseWatch()
		id := uuid.New()
		w1, w2 := w.waitFor(id), w.waitFor(id)
		w1.release()
		require.Len(t, w.runs, 1, "one waiter left")
		w2.release()
		require.Empty(t, w.runs)
		w3 := w.waitFor(id)
		w.fire(id)
		w3.release() // after the fire: must not touch a newer waiter set
		require.True(t, closedNow(w3.closed()))
		require.Empty(t, w.runs)
	})

	t.Run("OutcomesReachTheirOwnWaiters", func(t *testing.T) {
		t.Parallel()
		w := newCloseWatch()
		a, b, c := uuid.New(), uuid.New(), uuid.New()
		wa, wb, wc := w.waitFor(a), w.waitFor(b), w.waitFor(c)
		defer wa.release()
		defer wb.release()
		defer wc.release()
		outA := Outcome{State: StateCompleted, Output: []byte(`{"a": 1}`)}
		w.fireWith(map[uuid.UUID]Outcome{a: outA, c: {State: StateFailed}}, a, b)
		require.True(t, closedNow(wa.closed()))
		o, ok := wa.outcome()
		require.True(t, ok)
		require.Equal(t, outA, o)
		require.True(t, closedNow(wb.closed()))
		_, ok = wb.outcome()
		require.False(t, ok, "b closed without an outcome: its waiter reads the run")
		require.False(t, closedNow(wc.closed()), "an outcome alone does not close c")
	})

	t.Run("OpenRunsAreKnownUntilTheyClose", func(t *testing.T) {
		t.Parallel()
		w := newCloseWatch()
		a, b := uuid.New(), uuid.New()
		w.opened(a)
		wa, wb := w.waitFor(a), w.waitFor(b)
		defer wa.release()
		defer wb.release()
		require.True(t, wa.knownOpen)
		require.False(t, wb.knownOpen, "b was never created open here")
		w.fire(a)
		again := w.waitFor(a)
		defer again.release()
		require.False(t, again.knownOpen, "a closed: a new waiter reads it")
	})

	t.Run("AFailedCommitUnopensItsRuns", func(t *testing.T) {
		t.Parallel()
		w := newCloseWatch()
		a, b := uuid.New(), uuid.New()
		w.opened(a, b)
		w.unopened(a)
		wa, wb := w.waitFor(a), w.waitFor(b)
		defer wa.release()
		defer wb.release()
		require.False(t, wa.knownOpen)
		require.True(t, wb.knownOpen)
	})

	t.Run("ForgetDropsEveryOpenRun", func(t *testing.T) {
		t.Parallel()
		w := newCloseWatch()
		a := uuid.New()
		w.opened(a)
		w.forget()
		wa := w.waitFor(a)
		defer wa.release()
		require.False(t, wa.knownOpen)
	})

	t.Run("OpenRunsAreBoundedByTwoGenerations", func(t *testing.T) {
		t.Parallel()
		w := newCloseWatch()
		ids := make([]uuid.UUID, 2*openGeneration+1)
		for i := range ids {
			ids[i] = uuid.New()
		}
		w.opened(ids...)
		require.LessOrEqual(t, w.open.Len(), 2*openGeneration)
		oldest, newest := w.waitFor(ids[0]), w.waitFor(ids[len(ids)-1])
		defer oldest.release()
		defer newest.release()
		require.False(t, oldest.knownOpen, "the oldest generation is dropped")
		require.True(t, newest.knownOpen)
		prev := w.waitFor(ids[openGeneration+1])
		defer prev.release()
		require.True(t, prev.knownOpen, "the previous generation is still known")
	})
}

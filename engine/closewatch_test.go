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
		anyClose := w.wait()
		w.fire(a)
		require.True(t, closedNow(a1.closed()))
		require.True(t, closedNow(a2.closed()))
		_, ok := a1.outcome()
		require.False(t, ok, "fire hands no outcome over")
		require.False(t, closedNow(wb.closed()), "another run's close does not wake b")
		require.True(t, closedNow(anyClose), "the any-close waiters wake on every close")
		require.False(t, closedNow(w.wait()), "a fresh any-close channel after the fire")
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
}

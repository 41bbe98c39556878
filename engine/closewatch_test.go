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
		chA1, relA1 := w.waitFor(a)
		chA2, relA2 := w.waitFor(a)
		chB, relB := w.waitFor(b)
		defer relA1()
		defer relA2()
		defer relB()
		anyClose := w.wait()
		w.fire(a)
		require.True(t, closedNow(chA1))
		require.True(t, closedNow(chA2))
		require.False(t, closedNow(chB), "another run's close does not wake b")
		require.True(t, closedNow(anyClose), "the any-close waiters wake on every close")
		require.False(t, closedNow(w.wait()), "a fresh any-close channel after the fire")
	})

	t.Run("ReleasedWaitersLeaveNothingBehind", func(t *testing.T) {
		t.Parallel()
		w := newCloseWatch()
		id := uuid.New()
		_, rel1 := w.waitFor(id)
		_, rel2 := w.waitFor(id)
		rel1()
		require.Len(t, w.runs, 1, "one waiter left")
		rel2()
		require.Empty(t, w.runs)
		ch, rel := w.waitFor(id)
		w.fire(id)
		rel() // after the fire: must not touch a newer waiter set
		require.True(t, closedNow(ch))
		require.Empty(t, w.runs)
	})
}

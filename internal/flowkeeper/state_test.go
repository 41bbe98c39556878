package flowkeeper

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// chains names the entries' chains, in order.
func chains(es []Entry) []string {
	out := []string{}
	for _, e := range es {
		out = append(out, e.Chain)
	}
	return out
}

func TestState(t *testing.T) {
	t.Parallel()
	acq := func(chain string, max int) Acquire { return Acquire{Chain: chain, Execution: "x-" + chain, Max: max} }
	t.Run("AcquiresUpToTheLimitThenWait", func(t *testing.T) {
		t.Parallel()
		s := &State{}
		require.Equal(t, []string{"a"}, chains(s.Acquire(acq("a", 2))))
		require.Equal(t, []string{"b"}, chains(s.Acquire(acq("b", 2))))
		require.Empty(t, s.Acquire(acq("c", 2)))
		require.Equal(t, []string{"a", "b"}, chains(s.Holders))
		require.Equal(t, []string{"c"}, chains(s.Waiting))
		require.Equal(t, "x-c", s.Waiting[0].Execution)
	})
	t.Run("AReleaseGrantsTheNextWaiter", func(t *testing.T) {
		t.Parallel()
		s := &State{}
		for _, c := range []string{"a", "b", "c"} {
			s.Acquire(acq(c, 1))
		}
		require.Equal(t, []string{"b"}, chains(s.Release(Release{Chain: "a"})))
		require.Equal(t, []string{"b"}, chains(s.Holders))
		require.Empty(t, s.Release(Release{Chain: "nobody"}), "an unknown chain frees nothing")
		s.Released = nil
		require.Empty(t, s.Release(Release{Chain: "c"}), "a waiter's release takes it out of the queue")
		require.Empty(t, s.Waiting)
		require.Empty(t, s.Release(Release{Chain: "b"}))
		require.Empty(t, s.Holders)
	})
	t.Run("AChainIsCountedOnce", func(t *testing.T) {
		t.Parallel()
		s := &State{}
		s.Acquire(acq("a", 2))
		require.Empty(t, s.Acquire(acq("a", 2)), "a holder asking again")
		s.Acquire(acq("b", 2))
		s.Acquire(acq("c", 1))
		require.Empty(t, s.Acquire(acq("c", 1)), "a waiter asking again")
		require.Len(t, s.Holders, 2, "the limit lowered to 1 keeps both holders")
		require.Equal(t, []string{"c"}, chains(s.Waiting))
		require.Equal(t, int64(3), s.Arrivals)
	})
	t.Run("ARaisedLimitGrantsAtOnce", func(t *testing.T) {
		t.Parallel()
		s := &State{}
		for _, c := range []string{"a", "b", "c"} {
			s.Acquire(acq(c, 1))
		}
		require.Equal(t, []string{"b", "c", "d"}, chains(s.Acquire(acq("d", 4))))
	})
	t.Run("AHeldAcquireHoldsAtOnceOverTheLimit", func(t *testing.T) {
		t.Parallel()
		s := &State{}
		s.Acquire(acq("a", 1))
		require.Empty(t, s.Acquire(Acquire{Chain: "b", Execution: "x-b", Max: 1, Held: true}), "no grant for a run that runs")
		require.Equal(t, []string{"a", "b"}, chains(s.Holders))
		require.Empty(t, s.Acquire(acq("c", 1)))
		require.Empty(t, s.Release(Release{Chain: "a"}), "still one holder: the limit")
		require.Equal(t, []string{"c"}, chains(s.Release(Release{Chain: "b"})))
	})
	t.Run("AReleaseBeforeItsAcquireDropsIt", func(t *testing.T) {
		t.Parallel()
		s := &State{}
		require.Empty(t, s.Release(Release{Chain: "early"}))
		require.Equal(t, []string{"early"}, s.Released)
		require.Empty(t, s.Acquire(Acquire{Chain: "early", Execution: "x", Max: 1, Held: true}), "its chain closed: no slot")
		require.Empty(t, s.Holders)
		require.Empty(t, s.Released, "the acquire consumed the mark")
		require.Equal(t, []string{"next"}, chains(s.Acquire(acq("next", 1))), "the slot stayed free")
	})
	t.Run("ARefusedGrantFreesTheSlotOnce", func(t *testing.T) {
		t.Parallel()
		s := &State{}
		s.Acquire(acq("a", 1))
		s.Acquire(acq("b", 1))
		require.Equal(t, []string{"b"}, chains(s.Refuse("a")), "a's run closed: its slot goes to b")
		require.Empty(t, s.Release(Release{Chain: "a"}), "a's release after its refusal")
		require.Empty(t, s.Released, "nothing left to drop")
		require.Empty(t, s.Refused)
		require.Empty(t, s.Refuse("b"), "b's run refused its grant")
		require.Empty(t, s.Release(Release{Chain: "b"}))
		require.Empty(t, s.Refuse("b"), "a refusal after the release changes nothing")
		require.Empty(t, s.Released)
		require.Empty(t, s.Refused)
		require.Empty(t, s.Holders)
	})
	t.Run("PriorityComesFirst", func(t *testing.T) {
		t.Parallel()
		s := &State{}
		s.Acquire(acq("holder", 1))
		for _, a := range []Acquire{{Chain: "low", Priority: 5}, {Chain: "default"}, {Chain: "high", Priority: 1}} {
			s.Acquire(a)
		}
		var order []string
		for _, c := range []string{"holder", "high", "default"} {
			order = append(order, chains(s.Release(Release{Chain: c}))...)
		}
		require.Equal(t, []string{"high", "default", "low"}, order)
	})
	t.Run("FairnessKeysTakeTurns", func(t *testing.T) {
		t.Parallel()
		s := &State{}
		s.Acquire(Acquire{Chain: "holder", Max: 1})
		for i := range 20 {
			s.Acquire(Acquire{Chain: fmt.Sprint("a", i), Fairness: "A"})
		}
		s.Acquire(Acquire{Chain: "b0", Fairness: "B"})
		s.Acquire(Acquire{Chain: "c0", Fairness: "C", Weight: 2})
		s.Acquire(Acquire{Chain: "c1", Fairness: "C", Weight: 2})
		var order []string
		for prev := "holder"; len(order) < 6; {
			next := chains(s.Release(Release{Chain: prev}))
			require.Len(t, next, 1)
			order, prev = append(order, next[0]), next[0]
		}
		// Turns: a_i 1000(i+1), b0 1000, c0 500, c1 1000.
		require.Equal(t, []string{"c0", "a0", "b0", "c1", "a1", "a2"}, order)
	})
}

package loop

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSet(t *testing.T) {
	t.Parallel()
	type add struct {
		l    Set
		cond bool
	}
	all := []Set{Workflow, Timer, Callback, Outbox}
	tests := []struct {
		name string
		adds []add
		has  []Set
	}{
		{name: "Empty"},
		{name: "AddWhenTrue", adds: []add{{Timer, true}}, has: []Set{Timer}},
		{name: "NoAddWhenFalse", adds: []add{{Timer, false}, {Outbox, false}}},
		{name: "Several", adds: []add{{Workflow, true}, {Callback, false}, {Outbox, true}}, has: []Set{Workflow, Outbox}},
		{name: "AddTwice", adds: []add{{Callback, true}, {Callback, true}}, has: []Set{Callback}},
		{name: "FalseKeepsWhatWasAdded", adds: []add{{Workflow, true}, {Workflow, false}}, has: []Set{Workflow}},
		{name: "All", adds: []add{{Workflow, true}, {Timer, true}, {Callback, true}, {Outbox, true}}, has: all},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var s Set
			for _, a := range tt.adds {
				s.Add(a.l, a.cond)
			}
			for _, l := range all {
				require.Equal(t, slices.Contains(tt.has, l), s.Has(l), "loop %b", l)
			}
		})
	}
}

func TestSetLoopsAreDistinct(t *testing.T) {
	t.Parallel()
	var seen Set
	for _, l := range []Set{Workflow, Timer, Callback, Outbox} {
		require.NotZero(t, l)
		require.False(t, seen.Has(l), "loop %b shares a bit", l)
		seen.Add(l, true)
	}
}

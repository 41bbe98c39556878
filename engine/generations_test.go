package engine

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestGenerations(t *testing.T) {
	t.Parallel()

	t.Run("AFullGenerationAgesAndTheOneBeforeIsDropped", func(t *testing.T) {
		g := newGenerations[int, string](2)
		g.add(1, "one")
		g.add(2, "two")   // current: 1, 2
		g.add(3, "three") // previous: 1, 2; current: 3
		require.True(t, g.has(1))
		require.True(t, g.has(3))
		v, ok := g.get(1)
		require.True(t, ok)
		require.Equal(t, "one", v, "the previous generation's value")
		v, ok = g.get(3)
		require.True(t, ok)
		require.Equal(t, "three", v, "the current generation's value")
		require.Equal(t, 3, g.len())
		g.add(4, "four")
		g.add(5, "five") // previous: 3, 4; current: 5; 1 and 2 forgotten
		require.False(t, g.has(1))
		require.False(t, g.has(2))
		_, ok = g.get(2)
		require.False(t, ok)
		require.True(t, g.has(3))
		require.True(t, g.has(5))
		require.Equal(t, 3, g.len())
	})

	t.Run("RemoveReachesBothGenerations", func(t *testing.T) {
		g := newGenerations[string, struct{}](1)
		g.add("old", struct{}{})
		g.add("new", struct{}{})
		g.remove("old")
		g.remove("new")
		require.False(t, g.has("old"))
		require.False(t, g.has("new"))
		require.Zero(t, g.len())
	})
}

package engine

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestGenerations(t *testing.T) {
	t.Parallel()

	t.Run("AFullGenerationAgesAndTheOneBeforeIsDropped", func(t *testing.T) {
		g := newGenerations[int](2)
		g.add(1)
		g.add(2) // current: 1, 2
		g.add(3) // previous: 1, 2; current: 3
		require.True(t, g.has(1))
		require.True(t, g.has(3))
		require.Equal(t, 3, g.len())
		g.add(4)
		g.add(5) // previous: 3, 4; current: 5; 1 and 2 forgotten
		require.False(t, g.has(1))
		require.False(t, g.has(2))
		require.True(t, g.has(3))
		require.True(t, g.has(5))
		require.Equal(t, 3, g.len())
	})

	t.Run("RemoveReachesBothGenerations", func(t *testing.T) {
		g := newGenerations[string](1)
		g.add("old")
		g.add("new")
		g.remove("old")
		g.remove("new")
		require.False(t, g.has("old"))
		require.False(t, g.has("new"))
		require.Zero(t, g.len())
	})
}

package loop

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestGenerations(t *testing.T) {
	t.Parallel()

	t.Run("AFullGenerationAgesAndTheOneBeforeIsDropped", func(t *testing.T) {
		g := NewGenerations[int, string](2)
		g.Add(1, "one")
		g.Add(2, "two")   // current: 1, 2
		g.Add(3, "three") // previous: 1, 2; current: 3
		require.True(t, g.Has(1))
		require.True(t, g.Has(3))
		v, ok := g.Get(1)
		require.True(t, ok)
		require.Equal(t, "one", v, "the previous generation's value")
		v, ok = g.Get(3)
		require.True(t, ok)
		require.Equal(t, "three", v, "the current generation's value")
		require.Equal(t, 3, g.Len())
		g.Add(4, "four")
		g.Add(5, "five") // previous: 3, 4; current: 5; 1 and 2 forgotten
		require.False(t, g.Has(1))
		require.False(t, g.Has(2))
		_, ok = g.Get(2)
		require.False(t, ok)
		require.True(t, g.Has(3))
		require.True(t, g.Has(5))
		require.Equal(t, 3, g.Len())
	})

	t.Run("RemoveReachesBothGenerations", func(t *testing.T) {
		g := NewGenerations[string, struct{}](1)
		g.Add("old", struct{}{})
		g.Add("new", struct{}{})
		g.Remove("old")
		g.Remove("new")
		require.False(t, g.Has("old"))
		require.False(t, g.Has("new"))
		require.Zero(t, g.Len())
	})
}

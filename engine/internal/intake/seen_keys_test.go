package intake

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSeenKeys(t *testing.T) {
	t.Parallel()

	t.Run("KeysAreKnownByNameAndKey", func(t *testing.T) {
		t.Parallel()
		k := newSeenKeys()
		k.add("wf", "a")
		require.True(t, k.has("wf", "a"))
		require.False(t, k.has("other", "a"), "the workflow name is part of the key")
		require.False(t, k.has("wf", "b"))
		require.False(t, k.has("w", "fa"), "name and key do not run together")
	})

	t.Run("TwoGenerationsAreKept", func(t *testing.T) {
		t.Parallel()
		k := newSeenKeys()
		for i := range 2*seenGeneration + 1 {
			k.add("wf", fmt.Sprint(i))
		}
		require.LessOrEqual(t, k.keys.Len(), 2*seenGeneration)
		require.False(t, k.has("wf", "0"), "the oldest generation is dropped")
		require.True(t, k.has("wf", fmt.Sprint(seenGeneration+1)))
		require.True(t, k.has("wf", fmt.Sprint(2*seenGeneration)))
	})
}

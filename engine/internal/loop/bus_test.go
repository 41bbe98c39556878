package loop

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBus(t *testing.T) {
	t.Parallel()
	pending := func(ch chan struct{}) bool { return len(ch) == 1 }
	t.Run("WakeNudgesTheNamedLoops", func(t *testing.T) {
		t.Parallel()
		b := NewBus()
		b.Wake(Timer | Outbox)
		require.True(t, pending(b.Timer))
		require.True(t, pending(b.Outbox))
		require.False(t, pending(b.Workflow))
		require.False(t, pending(b.Callback))
		b.Wake(Flow)
		require.False(t, pending(b.Flow), "the engine's settle wakes the flow dispatcher")
	})
	t.Run("AllNudgesEveryLoopOnce", func(t *testing.T) {
		t.Parallel()
		b := NewBus()
		b.All()
		b.All() // a second nudge waits behind the first
		for _, ch := range []chan struct{}{b.Workflow, b.Activity, b.Timer, b.Callback, b.Outbox, b.Schedule, b.Deferred, b.Flow} {
			require.True(t, pending(ch))
		}
	})
}

package loop

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestWakeup(t *testing.T) {
	t.Parallel()

	t.Run("FiresWhenDueUntilEveryTimeIsDropped", func(t *testing.T) {
		t.Parallel()
		fired := make(chan time.Time, 8)
		w := NewWakeup(func() { fired <- time.Now() })
		t.Cleanup(w.Stop)
		armed := time.Now()
		w.After(60 * time.Millisecond)
		w.After(20 * time.Millisecond) // earlier: the timer moves to it
		w.After(40 * time.Millisecond)
		select {
		case at := <-fired:
			require.GreaterOrEqual(t, at.Sub(armed), 20*time.Millisecond, "never before the earliest time")
		case <-time.After(10 * time.Second):
			t.Fatal("the wakeup never fired")
		}
		require.Eventually(t, func() bool {
			w.mu.Lock()
			defer w.mu.Unlock()
			return len(w.times) == 0
		}, 10*time.Second, 5*time.Millisecond, "every time fires and is dropped (late ones together)")
	})

	t.Run("KeepsAtMostMax", func(t *testing.T) {
		t.Parallel()
		w := NewWakeup(func() {})
		t.Cleanup(w.Stop)
		for range WakeupMax + 10 {
			w.After(time.Hour)
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		require.Len(t, w.times, WakeupMax)
	})
}

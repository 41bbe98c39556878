package loop

import (
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// TestPollerArmIn checks that a wake-up is armed only between now and the
// next poll tick.
func TestPollerArmIn(t *testing.T) {
	wake := make(chan struct{}, 1)
	p := NewPoller(wake, time.Hour, zerolog.Nop())
	p.ArmIn(0)
	p.ArmIn(2 * time.Hour)
	require.Never(t, func() bool { return len(wake) > 0 }, 50*time.Millisecond, 5*time.Millisecond)
	p.ArmIn(time.Millisecond)
	require.Eventually(t, func() bool { return len(wake) > 0 }, time.Second, time.Millisecond)
	p.next.Stop()
}

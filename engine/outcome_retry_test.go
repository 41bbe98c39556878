package engine

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/harvestd/harvest/engine/internal/loop"
	"github.com/stretchr/testify/require"
)

// TestOutcomeSurvivesDatabaseBlip: an attempt whose outcome fails to
// record (here the first three tries, as while PostgreSQL restarts) is
// recorded by a later try, not left running until its lock expires (the
// activity's start-to-close is the 10 min default).
func TestOutcomeSurvivesDatabaseBlip(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var failed atomic.Int32
	e := b.engine(t, func(c *Config) {
		c.crashHook = func(_ context.Context, p loop.CrashPoint) error {
			if p == crashActivityOutcome && failed.Add(1) <= 3 {
				return errors.New("connection reset by peer")
			}
			return nil
		}
	})
	run := start(t, e, StartRequest{WorkflowName: "flaky", Input: []byte(`1`)})
	x := waitClosed(t, e, run.ExecutionID)
	require.Equal(t, StateCompleted, x.State, x.LastError)
	require.JSONEq(t, `2`, string(x.Output))
	require.GreaterOrEqual(t, failed.Load(), int32(4), "the record was tried again")
	requireSoundHistory(t, b.pool, run.ExecutionID)
}

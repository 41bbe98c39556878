package harvesttest_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine"
	"github.com/harvestd/harvest/harvesttest"
)

func TestWorkflowTimeouts(t *testing.T) {
	t.Parallel()
	setupTimeouts := func(t *testing.T) *harvesttest.Env {
		t.Helper()
		reg := harvest.NewRegistry()
		wait := func(ctx harvest.Context, _ string) (string, error) { return approved.Receive(ctx) }
		require.NoError(t, reg.Register(
			harvest.NewWorkflow("forever", wait),
			harvest.NewWorkflow("bounded", wait).WithTimeouts(harvest.WorkflowTimeouts{Run: 30 * time.Minute})))
		return harvesttest.New(t, reg)
	}
	lastEvent := func(t *testing.T, env *harvesttest.Env, id uuid.UUID) harvest.EventType {
		t.Helper()
		h := env.History(id)
		return h[len(h)-1].Type
	}

	t.Run("ExecutionTimeoutClosesTheRunTimedOut", func(t *testing.T) {
		t.Parallel()
		env := setupTimeouts(t)
		start := env.Now()
		id := env.Start("forever", "", harvesttest.WithExecutionTimeout(time.Hour)).ExecutionID
		x := env.Describe(id).Execution
		require.NotNil(t, x.ExecutionDeadline)
		require.WithinDuration(t, start.Add(time.Hour), *x.ExecutionDeadline, time.Minute)
		require.Nil(t, x.RunDeadline)

		env.Advance(time.Hour)
		o := env.Result(id)
		require.Equal(t, engine.StateTimedOut, o.State)
		require.JSONEq(t, `{"type":"timeout","message":"workflow execution timeout 1h0m0s"}`, string(o.Error))
		require.Equal(t, harvest.EventWorkflowTimedOut, lastEvent(t, env, id))
		require.Nil(t, env.Describe(id).Execution.ExecutionDeadline, "a closed run has no timer left")
	})

	t.Run("AWorkflowDefaultApplies", func(t *testing.T) {
		t.Parallel()
		env := setupTimeouts(t)
		id := env.Start("bounded", "").ExecutionID
		require.NotNil(t, env.Describe(id).Execution.RunDeadline)
		env.Advance(30 * time.Minute)
		o := env.Result(id)
		require.Equal(t, engine.StateTimedOut, o.State)
		require.JSONEq(t, `{"type":"timeout","message":"workflow run timeout 30m0s"}`, string(o.Error))
	})

	t.Run("AZeroTimeoutOnStartRemovesTheDefault", func(t *testing.T) {
		t.Parallel()
		env := setupTimeouts(t)
		id := env.Start("bounded", "", harvesttest.WithRunTimeout(0)).ExecutionID
		require.Nil(t, env.Describe(id).Execution.RunDeadline)
		require.Empty(t, env.Describe(id).PendingTimers)
	})

	t.Run("AKeyedReplayAddsNoSecondTimer", func(t *testing.T) {
		t.Parallel()
		env := setupTimeouts(t)
		first := env.Start("forever", "", harvesttest.WithIdempotencyKey("k"), harvesttest.WithExecutionTimeout(time.Hour))
		again := env.Start("forever", "", harvesttest.WithIdempotencyKey("k"), harvesttest.WithExecutionTimeout(2*time.Hour))
		require.Equal(t, first.ExecutionID, again.ExecutionID)
		require.True(t, again.Deduplicated)
		var n int
		require.NoError(t, env.Pool().QueryRow(context.Background(),
			`SELECT count(*) FROM harvest_timers WHERE execution_id = $1`, first.ExecutionID).Scan(&n))
		require.Equal(t, 1, n)
	})

	t.Run("ANegativeTimeoutIsRefused", func(t *testing.T) {
		t.Parallel()
		env := setupTimeouts(t)
		_, err := env.Engine().StartWorkflow(context.Background(), engine.StartRequest{WorkflowName: "forever",
			ExecutionTimeout: func() *time.Duration { d := -time.Second; return &d }()})
		require.ErrorIs(t, err, engine.ErrInvalidArgument)
	})
}

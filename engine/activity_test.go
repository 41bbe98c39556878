package engine

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/demo"
)

// scheduledKeys returns the idempotency keys recorded in ActivityScheduled.
func scheduledKeys(t *testing.T, e *Engine, id any) []string {
	t.Helper()
	var keys []string
	rows, err := e.pool.Query(context.Background(), `
		SELECT data->>'idempotency_key' FROM harvest_events
		 WHERE execution_id = $1 AND event_type = 'ActivityScheduled' ORDER BY event_id`, id)
	require.NoError(t, err)
	defer rows.Close()
	for rows.Next() {
		var k string
		require.NoError(t, rows.Scan(&k))
		keys = append(keys, k)
	}
	return keys
}

func TestActivityKeys(t *testing.T) {
	t.Parallel()

	t.Run("StableAcrossRetries", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := b.engine(t)
		run := start(t, e, StartRequest{WorkflowName: "flaky", Input: raw(t, 2)})
		x := waitClosed(t, e, run.ExecutionID)
		require.Equal(t, StateCompleted, x.State)
		require.JSONEq(t, "3", string(x.Output), "succeeded on the third attempt")
		keys := b.keys.get("flaky")
		require.Len(t, keys, 3)
		require.Equal(t, keys[0], keys[1])
		require.Equal(t, keys[0], keys[2])
		require.Equal(t, []string{keys[0]}, scheduledKeys(t, e, run.ExecutionID), "the key is recorded in ActivityScheduled")
		types := eventTypes(t, b.pool, run.ExecutionID)
		require.Equal(t, 1, count(types, harvest.EventActivityCompleted))
		require.Equal(t, 0, count(types, harvest.EventActivityFailed), "retries leave no history")
	})

	t.Run("RetriesExhaustedFailWorkflow", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := b.engine(t)
		run := start(t, e, StartRequest{WorkflowName: "flaky", Input: raw(t, 10)})
		x := waitClosed(t, e, run.ExecutionID)
		require.Equal(t, StateFailed, x.State)
		require.Len(t, b.keys.get("flaky"), 5, "max attempts of the policy")
		require.Contains(t, string(x.Error), "transient")
	})

	t.Run("DistinctPerInvocationAndExecution", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := b.engine(t)
		r1 := start(t, e, StartRequest{WorkflowName: "two_calls"})
		r2 := start(t, e, StartRequest{WorkflowName: "two_calls"})
		var out1, out2 []string
		require.NoError(t, json.Unmarshal(waitClosed(t, e, r1.ExecutionID).Output, &out1))
		require.NoError(t, json.Unmarshal(waitClosed(t, e, r2.ExecutionID).Output, &out2))
		require.NotEqual(t, out1[0], out1[1], "two invocations in one workflow")
		require.NotEqual(t, out1[0], out2[0], "same invocation in two workflows")
		require.Equal(t, out1, scheduledKeys(t, e, r1.ExecutionID))
	})

	t.Run("SubkeysStablePerName", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		e := b.engine(t)
		run := start(t, e, StartRequest{WorkflowName: demo.OnboardingName, Input: raw(t, demo.OnboardingInput{UserID: 42})})
		require.Equal(t, StateCompleted, waitClosed(t, e, run.ExecutionID).State)
		key := harvest.IdempotencyKey(scheduledKeys(t, e, run.ExecutionID)[0])
		svc := b.demo.Services
		require.Equal(t, []string{key.Subkey("db").String()}, svc.UserDB.Keys())
		require.Equal(t, []string{key.Subkey("email").String()}, svc.Mailer.Keys())
		require.NotEqual(t, key.Subkey("db"), key.Subkey("email"))
	})

	t.Run("StableAcrossEngineCrash", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		pay := b.demo.Services.Payments
		charged := make(chan string, 1)
		pay.AfterEffect = func(ctx context.Context, key string) error {
			if pay.Calls(key) == 1 {
				charged <- key
				<-ctx.Done() // the engine dies before it records the completion
				return ctx.Err()
			}
			return nil
		}
		e1 := b.engine(t)
		run := start(t, e1, StartRequest{WorkflowName: demo.OrderName, Input: raw(t, demo.OrderInput{OrderID: "o-1", AmountCents: 500})})
		key := <-charged
		crash(e1)
		require.Equal(t, []string{"WorkflowStarted", "ActivityScheduled"}, eventTypes(t, b.pool, run.ExecutionID))

		e2 := b.engine(t)
		require.Greater(t, e2.Epoch(), e1.Epoch())
		eventually(t, "the charge to be retried", func() bool { return pay.Calls(key) == 2 })
		_, err := e2.Signal(context.Background(), SignalRequest{ExecutionID: run.ExecutionID, SignalName: demo.ApprovedSignal, Payload: raw(t, demo.Approval{By: "ops"})})
		require.NoError(t, err)
		x := waitClosed(t, e2, run.ExecutionID)
		require.Equal(t, StateCompleted, x.State)
		require.Equal(t, 1, pay.Effects(), "one charge")
		require.Equal(t, 2, pay.Calls(key), "both attempts carried the same key")
		require.Equal(t, []string{key}, scheduledKeys(t, e2, run.ExecutionID))
		require.Equal(t, 1, count(eventTypes(t, b.pool, run.ExecutionID), harvest.EventActivityCompleted))
	})

	t.Run("HeartbeatTimeoutRetries", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		attempts := make(chan int, 4)
		// The heartbeat timeout is long enough that a busy machine starts
		// attempt 2 and heartbeats inside it; attempt 1 waits it out.
		slow := harvest.NewActivity("slow", func(ctx *harvest.ActivityContext, _ string) (int, error) {
			attempts <- ctx.Attempt()
			if ctx.Attempt() == 1 {
				<-ctx.Done() // never heartbeats: the watchdog fires
				return 0, ctx.Err()
			}
			if err := ctx.Heartbeat("halfway"); err != nil {
				return 0, err // a watchdog that fired first: the run fails the test
			}
			return ctx.Attempt(), nil
		}, harvest.ActivityOptions{HeartbeatTimeout: 3 * time.Second, Retry: harvest.Exponential(3, 10*time.Millisecond)})
		require.NoError(t, b.reg.Register(slow, harvest.NewWorkflow("hb", func(ctx harvest.Context, _ string) (int, error) {
			return slow.Execute(ctx, "").Get(ctx)
		})))
		e := b.engine(t)
		run := start(t, e, StartRequest{WorkflowName: "hb"})
		x := waitClosed(t, e, run.ExecutionID)
		require.Equal(t, StateCompleted, x.State)
		require.JSONEq(t, "2", string(x.Output))
	})

	t.Run("StartToCloseTimeoutIsRecorded", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		hang := harvest.NewActivity("hang", func(ctx *harvest.ActivityContext, _ string) (int, error) {
			<-ctx.Done()
			return 0, ctx.Err()
		}, harvest.ActivityOptions{StartToClose: 50 * time.Millisecond, Retry: harvest.Exponential(2, 10*time.Millisecond)})
		require.NoError(t, b.reg.Register(hang, harvest.NewWorkflow("hang", func(ctx harvest.Context, _ string) (string, error) {
			_, err := hang.Execute(ctx, "").Get(ctx)
			return "", err
		})))
		e := b.engine(t)
		run := start(t, e, StartRequest{WorkflowName: "hang"})
		x := waitClosed(t, e, run.ExecutionID)
		require.Equal(t, StateFailed, x.State)
		require.Contains(t, string(x.Error), TimeoutStartToClose)
		require.Equal(t, 1, count(eventTypes(t, b.pool, run.ExecutionID), harvest.EventActivityTimedOut))
	})

	t.Run("ScheduleToCloseEndsRetries", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		bad := harvest.NewActivity("always_fails", func(ctx *harvest.ActivityContext, _ string) (int, error) {
			return 0, harvest.NewApplicationError("down", "service down")
		}, harvest.ActivityOptions{ScheduleToClose: 300 * time.Millisecond,
			Retry: &harvest.RetryPolicy{MaxAttempts: -1, InitialInterval: 50 * time.Millisecond, BackoffCoefficient: 1}})
		require.NoError(t, b.reg.Register(bad, harvest.NewWorkflow("s2c", func(ctx harvest.Context, _ string) (string, error) {
			_, err := bad.Execute(ctx, "").Get(ctx)
			return "", err
		})))
		e := b.engine(t)
		run := start(t, e, StartRequest{WorkflowName: "s2c"})
		x := waitClosed(t, e, run.ExecutionID)
		require.Equal(t, StateFailed, x.State, "unlimited attempts still end at the schedule-to-close deadline")
	})
}

package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/store"
)

// retryTimes is what the database recorded of a retried attempt.
type retryTimes struct {
	failedAt, dueAt, claimedAt, leaseAt time.Time
}

// readRetryTimes reads the task of the run's activity "1" while its second
// attempt runs: when the first failed, when the second was due, when it
// was claimed (its lock counts from the claim) and when the lease was
// taken (the activity loop's poll ticks count from then).
func readRetryTimes(t *testing.T, e *Engine, id any) retryTimes {
	t.Helper()
	var r retryTimes
	require.NoError(t, e.pool.QueryRow(context.Background(), `
		SELECT t.last_failed_at, t.scheduled_at,
		       t.locked_until - ((t.options->>'start_to_close_ms')::bigint + $2) * interval '1 millisecond',
		       l.acquired_at
		  FROM harvest_tasks t, harvest_shard_lease l
		 WHERE t.execution_id = $1 AND t.activity_id = '1' AND t.attempt = 2 AND t.status = 'running'`,
		id, store.LeaseGrace.Milliseconds()).Scan(&r.failedAt, &r.dueAt, &r.claimedAt, &r.leaseAt))
	return r
}

// TestRetryOnTime: a retry is due exactly its backoff after the failure,
// and the activity loop wakes for it then, not at its next poll.
func TestRetryOnTime(t *testing.T) {
	t.Parallel()
	const (
		backoff = 200 * time.Millisecond
		poll    = 30 * time.Second // much longer than the backoff
	)

	setup := func(t *testing.T) (*Engine, *testBundle, chan struct{}, chan struct{}) {
		b := setup(t)
		started, release := make(chan struct{}), make(chan struct{})
		act := harvest.NewActivity("fail_once", func(ctx *harvest.ActivityContext, _ string) (int, error) {
			if ctx.Attempt() == 1 {
				return 0, errors.New("transient")
			}
			close(started)
			<-release
			return ctx.Attempt(), nil
		}, harvest.ActivityOptions{Retry: &harvest.RetryPolicy{MaxAttempts: 3, InitialInterval: backoff}})
		require.NoError(t, b.reg.Register(act, harvest.NewWorkflow("retry_on_time",
			func(ctx harvest.Context, in string) (int, error) { return act.Execute(ctx, in).Get(ctx) })))
		e := b.engine(t, func(c *Config) { c.PollInterval = poll })
		return e, b, started, release
	}

	t.Run("DueAtFailurePlusBackoffAndWokenThen", func(t *testing.T) {
		t.Parallel()
		e, _, started, release := setup(t)
		run := start(t, e, StartRequest{WorkflowName: "retry_on_time", Input: raw(t, "x")})
		select {
		case <-started:
		case <-ctxT(t).Done():
			t.Fatal("the second attempt never started")
		}
		r := readRetryTimes(t, e, run.ExecutionID)
		close(release)
		t.Logf("failed %s, due +%s, claimed +%s after the failure", r.failedAt.Format(time.StampMicro),
			r.dueAt.Sub(r.failedAt), r.claimedAt.Sub(r.failedAt))
		require.Equal(t, backoff, r.dueAt.Sub(r.failedAt), "due exactly the backoff after the recorded failure")
		require.False(t, r.claimedAt.Before(r.dueAt), "claimed at %s, before it was due at %s", r.claimedAt, r.dueAt)
		require.Less(t, r.claimedAt.Sub(r.dueAt), poll/2, "claimed by the retry's wakeup, not a poll")
		require.True(t, r.claimedAt.Before(r.leaseAt.Add(poll)), "claimed before the activity loop's first poll tick")
		x := waitClosed(t, e, run.ExecutionID)
		require.Equal(t, StateCompleted, x.State)
		require.JSONEq(t, "2", string(x.Output))
	})
}

package engine

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
)

// asyncBundle runs workflow "async" (input: the activity's name), whose
// one activity mints its task token, hands it to the test and answers
// harvest.ErrResultPending.
type asyncBundle struct {
	*testBundle
	e      *Engine
	tokens chan string // one per attempt, in order
}

func setupAsync(t *testing.T) *asyncBundle {
	t.Helper()
	b := &asyncBundle{testBundle: setup(t), tokens: make(chan string, 16)}
	pending := func(ctx *harvest.ActivityContext, _ string) (json.RawMessage, error) {
		tok, err := ctx.TaskToken()
		if err != nil {
			return nil, err
		}
		b.tokens <- tok
		return nil, harvest.ErrResultPending
	}
	activities := []*harvest.Activity[string, json.RawMessage]{
		// async_once: one attempt, no heartbeat timeout.
		harvest.NewActivity("async_once", pending, harvest.ActivityOptions{Retry: &harvest.RetryPolicy{MaxAttempts: 1}}),
		// async_twice: two attempts, a heartbeat timeout of 300 ms.
		harvest.NewActivity("async_twice", pending, harvest.ActivityOptions{HeartbeatTimeout: 300 * time.Millisecond,
			Retry: &harvest.RetryPolicy{MaxAttempts: 2, InitialInterval: 10 * time.Millisecond}}),
		// async_no_token answers pending without a token.
		harvest.NewActivity("async_no_token", func(*harvest.ActivityContext, string) (json.RawMessage, error) {
			return nil, harvest.ErrResultPending
		}, harvest.ActivityOptions{Retry: &harvest.RetryPolicy{MaxAttempts: 3}}),
	}
	byName := map[string]*harvest.Activity[string, json.RawMessage]{}
	for _, a := range activities {
		require.NoError(t, b.reg.Register(a))
		byName[a.Name()] = a
	}
	require.NoError(t, b.reg.Register(harvest.NewWorkflow("async", func(ctx harvest.Context, activity string) (json.RawMessage, error) {
		return byName[activity].Execute(ctx, "go").Get(ctx)
	})))
	b.e = b.engine(t)
	return b
}

// run starts "async" on activity and returns the run and its first token.
func (b *asyncBundle) run(t *testing.T, activity string) (StartResult, string) {
	t.Helper()
	res := start(t, b.e, StartRequest{WorkflowName: "async", Input: raw(t, activity)})
	return res, b.token(t)
}

func (b *asyncBundle) token(t *testing.T) string {
	t.Helper()
	select {
	case tok := <-b.tokens:
		require.True(t, strings.HasPrefix(tok, taskTokenPrefix), tok)
		return tok
	case <-time.After(10 * time.Second):
		t.Fatal("no task token")
		return ""
	}
}

// waitAsync waits until the attempt of token is marked async.
func (b *asyncBundle) waitAsync(t *testing.T, token string) {
	t.Helper()
	require.Eventually(t, func() bool {
		var async bool
		err := b.pool.QueryRow(context.Background(), `
			SELECT t.async FROM harvest_tasks t JOIN harvest_task_tokens k ON k.task_id = t.task_id AND k.attempt = t.attempt
			 WHERE k.token_hash = $1`, hashToken(token)).Scan(&async)
		return err == nil && async
	}, 10*time.Second, 10*time.Millisecond)
}

func TestAsyncCompletion(t *testing.T) {
	t.Parallel()

	t.Run("CompleteThenDuplicateAfterClose", func(t *testing.T) {
		t.Parallel()
		b := setupAsync(t)
		run, tok := b.run(t, "async_once")
		b.waitAsync(t, tok)
		var hash []byte
		require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT token_hash FROM harvest_task_tokens`).Scan(&hash))
		require.NotContains(t, string(hash), tok[len(taskTokenPrefix):], "only the hash is stored")

		ans, err := b.e.CompleteActivity(ctxT(t), tok, json.RawMessage(`{"paid":true}`))
		require.NoError(t, err)
		require.False(t, ans.Duplicate)
		require.Equal(t, run.ExecutionID, ans.ExecutionID)
		require.Equal(t, 1, ans.Attempt)
		x := waitClosed(t, b.e, run.ExecutionID)
		require.Equal(t, StateCompleted, x.State)
		require.JSONEq(t, `{"paid":true}`, string(x.Output))
		before := eventTypes(t, b.pool, run.ExecutionID)
		require.Equal(t, 1, count(before, harvest.EventActivityCompleted))

		again, err := b.e.CompleteActivity(ctxT(t), tok, json.RawMessage(`{"paid":"twice"}`))
		require.NoError(t, err, "a duplicate answers the same even after the run closed")
		require.True(t, again.Duplicate)
		require.Equal(t, before, eventTypes(t, b.pool, run.ExecutionID), "nothing appended")
		_, err = b.e.FailActivity(ctxT(t), tok, harvest.ErrorInfo{Message: "late"})
		require.ErrorIs(t, err, ErrAnswered)
	})

	t.Run("Fail", func(t *testing.T) {
		t.Parallel()
		b := setupAsync(t)
		run, tok := b.run(t, "async_once")
		b.waitAsync(t, tok)
		_, err := b.e.FailActivity(ctxT(t), tok, harvest.ErrorInfo{Message: "card declined", Type: "declined"})
		require.NoError(t, err)
		x := waitClosed(t, b.e, run.ExecutionID)
		require.Equal(t, StateFailed, x.State)
		require.Contains(t, string(x.Error), "card declined")
		require.Equal(t, 1, count(eventTypes(t, b.pool, run.ExecutionID), harvest.EventActivityFailed))
	})

	t.Run("HeartbeatsKeepItOpenThenTimeoutRetriesAndStaleAttempt", func(t *testing.T) {
		t.Parallel()
		b := setupAsync(t)
		run, first := b.run(t, "async_twice")
		b.waitAsync(t, first)
		for range 6 { // 600 ms of heartbeats, twice the timeout
			ans, err := b.e.HeartbeatActivity(ctxT(t), first, json.RawMessage(`{"step":1}`))
			require.NoError(t, err)
			require.False(t, ans.CancelRequested)
			time.Sleep(100 * time.Millisecond) // the heartbeats' pace, not a wait for a condition
		}
		select {
		case tok := <-b.tokens:
			t.Fatalf("a heartbeating attempt was retried (token %s…)", tok[:12])
		default:
		}
		// No more heartbeats: the attempt times out, the policy retries.
		second := b.token(t)
		require.NotEqual(t, first, second)
		_, err := b.e.CompleteActivity(ctxT(t), first, json.RawMessage(`1`))
		require.ErrorIs(t, err, ErrStaleAttempt, "the first attempt's token after its timeout")
		_, err = b.e.HeartbeatActivity(ctxT(t), first, nil)
		require.ErrorIs(t, err, ErrStaleAttempt)
		// The second attempt times out too: the run fails with the timeout.
		x := waitClosed(t, b.e, run.ExecutionID)
		require.Equal(t, StateFailed, x.State)
		types := eventTypes(t, b.pool, run.ExecutionID)
		require.Equal(t, 1, count(types, harvest.EventActivityTimedOut))
		require.Contains(t, string(x.Error), TimeoutHeartbeat)
		_, err = b.e.CompleteActivity(ctxT(t), second, json.RawMessage(`2`))
		var term *TerminalError
		require.ErrorAs(t, err, &term, "the second attempt's token after the run closed")
	})

	t.Run("FirstCompletionForAClosedRun", func(t *testing.T) {
		t.Parallel()
		b := setupAsync(t)
		run, tok := b.run(t, "async_once")
		b.waitAsync(t, tok)
		_, err := b.e.Terminate(ctxT(t), run.ExecutionID, "test")
		require.NoError(t, err)
		_, err = b.e.CompleteActivity(ctxT(t), tok, json.RawMessage(`1`))
		var term *TerminalError
		require.ErrorAs(t, err, &term)
		require.Equal(t, StateTerminated, term.State)
		require.Zero(t, count(eventTypes(t, b.pool, run.ExecutionID), harvest.EventActivityCompleted))
	})

	t.Run("UnknownTokens", func(t *testing.T) {
		t.Parallel()
		b := setupAsync(t)
		run, tok := b.run(t, "async_once")
		forged := tok[:len(tok)-8] + "00000000"
		if forged == tok {
			forged = tok[:len(tok)-8] + "11111111"
		}
		for _, bad := range []string{forged, "", "hvtt_", "hvtt_zz_" + strings.Repeat("0", 64), "Bearer " + tok} {
			_, err := b.e.CompleteActivity(ctxT(t), bad, json.RawMessage(`1`))
			require.ErrorIs(t, err, ErrTaskToken, "%q", bad)
		}
		_, err := b.e.CompleteActivity(ctxT(t), tok, json.RawMessage(`"ok"`))
		require.NoError(t, err)
		require.Equal(t, StateCompleted, waitClosed(t, b.e, run.ExecutionID).State)
	})

	t.Run("PendingWithoutATokenFailsForGood", func(t *testing.T) {
		t.Parallel()
		b := setupAsync(t)
		run := start(t, b.e, StartRequest{WorkflowName: "async", Input: raw(t, "async_no_token")})
		x := waitClosed(t, b.e, run.ExecutionID)
		require.Equal(t, StateFailed, x.State)
		require.Contains(t, string(x.Error), "async_without_token")
	})

	t.Run("CompletedBeforeMarkedAsync", func(t *testing.T) {
		// The remote side may answer before the engine records "pending":
		// the answer wins, and marking finds nothing to mark.
		t.Parallel()
		b := setupAsync(t)
		run, tok := b.run(t, "async_once")
		_, err := b.e.CompleteActivity(ctxT(t), tok, json.RawMessage(`"fast"`))
		if errors.Is(err, ErrStaleAttempt) {
			t.Fatal("a completion of the current attempt was refused")
		}
		require.NoError(t, err)
		x := waitClosed(t, b.e, run.ExecutionID)
		require.Equal(t, StateCompleted, x.State)
		require.JSONEq(t, `"fast"`, string(x.Output))
	})
}

// TestHTTPActivityAsync: an HTTP activity with Async sends the attempt's
// task token and takes 202 for "I will finish later"; the service then
// completes it with the token.
func TestHTTPActivityAsync(t *testing.T) {
	t.Parallel()
	tokens := make(chan string, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tokens <- r.Header.Get(harvest.TaskTokenHeader)
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(srv.Close)
	b := setup(t)
	charge := harvest.NewHTTPActivity[map[string]any, json.RawMessage]("charge_async", srv.URL, harvest.HTTPActivityOptions{
		Async: true, Headers: map[string]string{harvest.TaskTokenHeader: "a header cannot forge the token"},
		Activity: harvest.ActivityOptions{Retry: &harvest.RetryPolicy{MaxAttempts: 1}}})
	require.NoError(t, b.reg.Register(charge, harvest.NewWorkflow("http_async", func(ctx harvest.Context, in map[string]any) (json.RawMessage, error) {
		return charge.Execute(ctx, in).Get(ctx)
	})))
	e := b.engine(t, func(c *Config) { c.CallbackPolicy = loopbackOnly })
	run := start(t, e, StartRequest{WorkflowName: "http_async", Input: raw(t, map[string]int{"amount": 1})})
	var tok string
	select {
	case tok = <-tokens:
	case <-time.After(10 * time.Second):
		t.Fatal("the service got no request")
	}
	require.True(t, strings.HasPrefix(tok, taskTokenPrefix), "the service got the task token, not %q", tok)
	_, err := e.CompleteActivity(ctxT(t), tok, json.RawMessage(`{"charged":true}`))
	require.NoError(t, err)
	x := waitClosed(t, e, run.ExecutionID)
	require.Equal(t, StateCompleted, x.State, "%s", x.Error)
	require.JSONEq(t, `{"charged":true}`, string(x.Output))
}

// TestAsyncAttemptSurvivesACrash: a pending attempt is not reclaimed by
// the next owner (its token may still answer); the new owner accepts the
// token's completion.
func TestAsyncAttemptSurvivesACrash(t *testing.T) {
	t.Parallel()
	b := setupAsync(t)
	run, tok := b.run(t, "async_once")
	b.waitAsync(t, tok)
	crash(b.e)
	e2 := b.engine(t)
	require.Greater(t, e2.Epoch(), b.e.Epoch())
	// Another run's activity completing on e2 means e2's activity loop has
	// made its reclaiming passes meanwhile.
	other := start(t, e2, StartRequest{WorkflowName: "two_calls"})
	require.Equal(t, StateCompleted, waitClosed(t, e2, other.ExecutionID).State)
	var attempt int
	var async bool
	require.NoError(t, b.pool.QueryRow(context.Background(),
		`SELECT attempt, async FROM harvest_tasks WHERE execution_id = $1`, run.ExecutionID).Scan(&attempt, &async))
	require.Equal(t, 1, attempt, "the pending attempt was not reclaimed")
	require.True(t, async)
	select {
	case tok := <-b.tokens:
		t.Fatalf("a new attempt minted a token (%s…)", tok[:12])
	default:
	}
	ans, err := e2.CompleteActivity(ctxT(t), tok, json.RawMessage(`"after the crash"`))
	require.NoError(t, err)
	require.Equal(t, 1, ans.Attempt)
	x := waitClosed(t, e2, run.ExecutionID)
	require.Equal(t, StateCompleted, x.State)
	require.JSONEq(t, `"after the crash"`, string(x.Output))
}

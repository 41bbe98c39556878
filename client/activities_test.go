package client_test

import (
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/client"
)

// pendingTokens hands each "pending" attempt's task token to the test
// whose run's input names the channel.
var pendingTokens sync.Map // string → chan string

var (
	pendingActivity = harvest.NewActivity("pending", func(ctx *harvest.ActivityContext, ch string) (json.RawMessage, error) {
		tok, err := ctx.TaskToken()
		if err != nil {
			return nil, err
		}
		if c, ok := pendingTokens.Load(ch); ok {
			c.(chan string) <- tok
		}
		return nil, harvest.ErrResultPending
	}, harvest.ActivityOptions{Retry: &harvest.RetryPolicy{MaxAttempts: 2, InitialInterval: 10 * time.Millisecond}})
	pendingWF = harvest.NewWorkflow("pending", func(ctx harvest.Context, ch string) (json.RawMessage, error) {
		return pendingActivity.Execute(ctx, ch).Get(ctx)
	})
)

func TestAsyncCompletionClient(t *testing.T) {
	t.Parallel()
	b := setupServer(t)
	ch := uuid.NewString()
	tokens := make(chan string, 4)
	pendingTokens.Store(ch, tokens)
	t.Cleanup(func() { pendingTokens.Delete(ch) })
	run, err := b.api.Start(ctxT(t), "pending", client.StartRequest{Input: json.RawMessage(`"` + ch + `"`)})
	require.NoError(t, err)
	next := func() string {
		select {
		case tok := <-tokens:
			return tok
		case <-time.After(10 * time.Second):
			t.Fatal("no task token")
			return ""
		}
	}
	first := next()
	ans, err := b.api.HeartbeatActivity(ctxT(t), first, map[string]int{"pct": 10})
	require.NoError(t, err)
	require.False(t, ans.CancelRequested)
	ans, err = b.api.FailActivity(ctxT(t), first, client.ActivityFailure{Message: "busy"})
	require.NoError(t, err)
	require.True(t, ans.Retried)
	second := next()
	_, err = b.api.CompleteActivity(ctxT(t), first, 1)
	require.True(t, errors.Is(err, client.ErrConflict), "the first attempt's token: %v", err)
	ans, err = b.api.CompleteActivity(ctxT(t), second, map[string]bool{"ok": true})
	require.NoError(t, err)
	require.Equal(t, 2, ans.Attempt)
	require.Equal(t, run.ExecutionID, ans.ExecutionID)
	again, err := b.api.CompleteActivity(ctxT(t), second, map[string]bool{"ok": true})
	require.NoError(t, err)
	require.True(t, again.Duplicate)
	_, err = b.api.CompleteActivity(ctxT(t), "hvtt_forged", 1)
	require.True(t, errors.Is(err, client.ErrUnauthenticated), "%v", err)
	_, err = b.api.CompleteActivity(ctxT(t), "", 1)
	require.ErrorIs(t, err, client.ErrInvalid)
}

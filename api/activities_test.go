package api

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
)

// asyncTokens hands each "hand_token" attempt's task token to the test
// that started its run: the run's input names the channel.
var asyncTokens sync.Map // string → chan string

var (
	handToken = harvest.NewActivity("hand_token", func(ctx *harvest.ActivityContext, ch string) (json.RawMessage, error) {
		tok, err := ctx.TaskToken()
		if err != nil {
			return nil, err
		}
		if c, ok := asyncTokens.Load(ch); ok {
			c.(chan string) <- tok
		}
		return nil, harvest.ErrResultPending
	}, harvest.ActivityOptions{HeartbeatTimeout: time.Second, Retry: &harvest.RetryPolicy{MaxAttempts: 2, InitialInterval: 10 * time.Millisecond}})
	handTokenWF = harvest.NewWorkflow("hand_token", func(ctx harvest.Context, ch string) (json.RawMessage, error) {
		return handToken.Execute(ctx, ch).Get(ctx)
	})
)

// startAsync starts "hand_token" and returns its execution id and the
// first attempt's task token.
func (b *testBundle) startAsync(t *testing.T, headers ...string) (string, chan string, string) {
	t.Helper()
	ch := uuid.NewString()
	tokens := make(chan string, 4)
	asyncTokens.Store(ch, tokens)
	t.Cleanup(func() { asyncTokens.Delete(ch) })
	res := b.do(t, http.MethodPost, "/workflows/hand_token/start", map[string]any{"input": ch}, headers...)
	require.Equal(t, http.StatusCreated, res.Status, "%s", res.Raw)
	return res.Body["execution_id"].(string), tokens, receiveToken(t, tokens)
}

func receiveToken(t *testing.T, tokens chan string) string {
	t.Helper()
	select {
	case tok := <-tokens:
		return tok
	case <-time.After(10 * time.Second):
		t.Fatal("no task token")
		return ""
	}
}

func (b *testBundle) async(t *testing.T, verb, token string, body any) response {
	t.Helper()
	var headers []string
	if token != "" {
		headers = []string{harvest.TaskTokenHeader, token}
	}
	return b.do(t, http.MethodPost, "/activities/"+verb, body, headers...)
}

func TestAsyncCompletionRoutes(t *testing.T) {
	t.Parallel()

	t.Run("CompleteAndDuplicate", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		id, _, tok := b.startAsync(t)
		res := b.async(t, "heartbeat", tok, map[string]any{"details": map[string]int{"step": 1}})
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
		require.Equal(t, false, res.Body["cancel_requested"])
		res = b.async(t, "complete", tok, map[string]any{"output": map[string]bool{"done": true}})
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
		require.Equal(t, id, res.Body["execution_id"])
		require.Equal(t, false, res.Body["duplicate"])
		x := b.do(t, http.MethodGet, "/workflows/"+id+"/result?wait=10s", nil)
		require.Equal(t, "COMPLETED", x.Body["state"], "%s", x.Raw)
		before := b.counts(t)
		res = b.async(t, "complete", tok, map[string]any{"output": 2})
		require.Equal(t, http.StatusOK, res.Status, "a duplicate after the run closed: %s", res.Raw)
		require.Equal(t, true, res.Body["duplicate"])
		require.Equal(t, before, b.counts(t), "nothing appended")
		requireError(t, b.async(t, "fail", tok, map[string]any{"error": map[string]string{"message": "x"}}), http.StatusConflict, codeConflict)
		requireError(t, b.async(t, "heartbeat", tok, map[string]any{}), http.StatusConflict, codeTerminal)
	})

	t.Run("FailRetriesThenStaleAttempt", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		id, tokens, first := b.startAsync(t)
		res := b.async(t, "fail", first, map[string]any{"error": map[string]any{"message": "busy", "type": "busy"}})
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
		require.Equal(t, true, res.Body["retried"])
		second := receiveToken(t, tokens)
		requireError(t, b.async(t, "heartbeat", first, map[string]any{}), http.StatusConflict, codeConflict)
		res = b.async(t, "fail", second, map[string]any{"error": map[string]any{"message": "declined", "non_retryable": true}})
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
		x := b.do(t, http.MethodGet, "/workflows/"+id+"/result?wait=10s", nil)
		require.Equal(t, "FAILED", x.Body["state"], "%s", x.Raw)
	})

	t.Run("HeartbeatTimeoutThenStale", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		_, tokens, first := b.startAsync(t)
		second := receiveToken(t, tokens) // the first attempt missed its heartbeat timeout (1 s)
		requireError(t, b.async(t, "complete", first, map[string]any{"output": 1}), http.StatusConflict, codeStaleAttempt)
		res := b.async(t, "complete", second, map[string]any{"output": 2})
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	})

	t.Run("ClosedRun", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		id, _, tok := b.startAsync(t)
		res := b.do(t, http.MethodPost, "/workflows/"+id+"/terminate", map[string]any{"reason": "test"})
		require.Equal(t, http.StatusAccepted, res.Status, "%s", res.Raw)
		requireError(t, b.async(t, "complete", tok, map[string]any{"output": 1}), http.StatusConflict, codeTerminal)
	})

	t.Run("Refusals", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		_, _, tok := b.startAsync(t)
		forged := tok[:len(tok)-4] + "0000"
		if forged == tok {
			forged = tok[:len(tok)-4] + "1111"
		}
		for _, tc := range []struct {
			name, verb, token string
			body              any
			status            int
			code              string
		}{
			{"NoToken", "complete", "", map[string]any{"output": 1}, http.StatusUnauthorized, codeUnauthenticated},
			{"MalformedToken", "complete", "hvtt_nope", map[string]any{"output": 1}, http.StatusUnauthorized, codeUnauthenticated},
			{"ForgedToken", "complete", forged, map[string]any{"output": 1}, http.StatusUnauthorized, codeUnauthenticated},
			{"UnknownField", "complete", tok, map[string]any{"result": 1}, http.StatusBadRequest, codeInvalidJSON},
			{"FailWithoutMessage", "fail", tok, map[string]any{"error": map[string]any{}}, http.StatusBadRequest, codeInvalidArgument},
			{"NotJSON", "heartbeat", tok, "{", http.StatusBadRequest, codeInvalidJSON},
		} {
			t.Run(tc.name, func(t *testing.T) {
				requireError(t, b.async(t, tc.verb, tc.token, tc.body), tc.status, tc.code)
			})
		}
		res := b.async(t, "complete", tok, map[string]any{"output": "still fine"})
		require.Equal(t, http.StatusOK, res.Status, "the refusals changed nothing: %s", res.Raw)
	})
}

// TestAsyncTokenNeverLogged: a refused or accepted token reaches no log.
func TestAsyncTokenNeverLogged(t *testing.T) {
	b := setupHooks(t)
	id, _, tok := b.startAsync(t, "Authorization", b.tokens["write"])
	requireError(t, b.async(t, "complete", tok[:len(tok)-1], map[string]any{"output": 1}), http.StatusUnauthorized, codeUnauthenticated)
	res := b.async(t, "complete", tok, map[string]any{"output": 1})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	_, err := b.engine.Describe(context.Background(), mustUUID(t, id))
	require.NoError(t, err)
	require.NotContains(t, b.logs.String(), tok[len("hvtt_")+33:])
}

package client_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/client"
	"github.com/harvestd/harvest/demo"
)

func TestServerDeferred(t *testing.T) {
	t.Parallel()
	b := setupServer(t)
	input := map[string]int{"activities": 1}

	t.Run("a debounce starts one run", func(t *testing.T) {
		deb := &client.Debounce{Key: "k", Window: client.Duration(200 * time.Millisecond)}
		first, err := b.api.StartDeferred(ctxT(t), demo.NoopChainName, client.DeferredStartRequest{Input: input, Debounce: deb})
		require.NoError(t, err)
		require.Equal(t, "pending", first.State)
		pending, err := b.api.PendingDeferred(ctxT(t))
		require.NoError(t, err)
		require.Len(t, pending, 1)
		require.Equal(t, first.ID, pending[0].ID)
		second, err := b.api.StartDeferred(ctxT(t), demo.NoopChainName, client.DeferredStartRequest{Input: input, Debounce: deb})
		require.NoError(t, err)
		require.Equal(t, first.ID, second.ID)
		require.Equal(t, 2, second.Starts)
		require.Eventually(t, func() bool {
			d, err := b.api.DeferredStart(ctxT(t), first.ID)
			if err == nil && d.State != "pending" && d.State != "firing" {
				require.Equal(t, "started", d.State, d.Reason)
			}
			return err == nil && d.State == "started" && d.ExecutionID != ""
		}, 20*time.Second, 20*time.Millisecond)
	})
	t.Run("a throttled start past the backlog is not retried", func(t *testing.T) {
		th := &client.Throttle{Key: "t", Rate: 1, Per: client.Duration(time.Hour), MaxBacklog: 1}
		first, err := b.api.StartDeferred(ctxT(t), demo.NoopChainName, client.DeferredStartRequest{Input: input, Throttle: th})
		require.NoError(t, err)
		require.Eventually(t, func() bool { // an idle key's start fires at once
			d, err := b.api.DeferredStart(ctxT(t), first.ID)
			return err == nil && d.State == "started"
		}, 20*time.Second, 20*time.Millisecond)
		_, err = b.api.StartDeferred(ctxT(t), demo.NoopChainName, client.DeferredStartRequest{Input: input, Throttle: th})
		require.NoError(t, err)
		began := time.Now()
		_, err = b.api.StartDeferred(ctxT(t), demo.NoopChainName, client.DeferredStartRequest{Input: input, Throttle: th})
		var e *client.Error
		require.True(t, errors.As(err, &e), "%v", err)
		require.Equal(t, http.StatusTooManyRequests, e.Status)
		require.Equal(t, client.CodeThrottled, e.Code)
		require.Less(t, time.Since(began), 5*time.Second, "answered, not waited on")
	})
	t.Run("a batch whose list the schema refuses fails", func(t *testing.T) {
		d, err := b.api.StartDeferred(ctxT(t), demo.NoopChainName, client.DeferredStartRequest{Input: input,
			Batch: &client.Batch{Key: "one", MaxSize: 1}})
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			d, err = b.api.DeferredStart(ctxT(t), d.ID)
			return err == nil && d.State == "failed"
		}, 20*time.Second, 20*time.Millisecond)
		require.Contains(t, d.Reason, "input")
	})
	t.Run("a request without a policy is refused before it is sent", func(t *testing.T) {
		_, err := b.api.StartDeferred(ctxT(t), demo.NoopChainName, client.DeferredStartRequest{})
		require.ErrorIs(t, err, client.ErrInvalid)
	})
}

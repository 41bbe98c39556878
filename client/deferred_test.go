package client_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/api"
	"github.com/harvestd/harvest/client"
	"github.com/harvestd/harvest/demo"
	"github.com/harvestd/harvest/engine"
	"github.com/harvestd/harvest/harvesttest"
)

func TestServerDeferred(t *testing.T) {
	t.Parallel()
	clock := harvesttest.NewClock()
	b := setupServerEngine(t, func(e *engine.Engine) api.Config { return api.Config{Gates: e} },
		func(c *engine.Config) { c.Clock = clock })
	input := map[string]int{"activities": 1}

	// The window is an hour of the test clock, which moves only when the
	// test advances it: however slow the machine, the second call lands
	// inside the window, so a second item would be the debounce's bug.
	t.Run("a debounce starts one run", func(t *testing.T) {
		deb := &client.Debounce{Key: "k", Window: client.Duration(time.Hour)}
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
		clock.Advance(2 * time.Hour)
		require.Eventually(t, func() bool {
			d, err := b.api.DeferredStart(ctxT(t), first.ID)
			if err == nil && d.State != "pending" && d.State != "firing" {
				require.Equal(t, "started", d.State, d.Reason)
			}
			return err == nil && d.State == "started" && d.ExecutionID != ""
		}, 20*time.Second, 20*time.Millisecond)
		pending, err = b.api.PendingDeferred(ctxT(t))
		require.NoError(t, err)
		require.Empty(t, pending, "one item, fired once")
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

// TestDeferredRetries: a deferred start takes no key, so one that may
// have reached a node is not resent: a node whose forward to the shard's
// owner failed answers 503 also when the owner recorded the start (a
// second batch entry, a second throttled start). A shed request did no
// work and is resent.
func TestDeferredRetries(t *testing.T) {
	t.Parallel()
	fast := client.WithRetryPolicy(client.RetryPolicy{InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond})
	item := answer{status: http.StatusAccepted, body: `{"deferred_id":"0003e55d-7b8b-43d8-a500-3e0495338084","state":"pending","starts":1}`}
	req := client.DeferredStartRequest{Input: 1, Batch: &client.Batch{Key: "orders"}}

	t.Run("a 503 or 502 is not resent", func(t *testing.T) {
		t.Parallel()
		for _, lost := range []answer{unavailable, {status: http.StatusBadGateway, body: "bad gateway"}} {
			s := script(t, lost, item)
			_, err := client.New(s.srv.URL, fast).StartDeferred(ctxT(t), "order", req)
			require.Error(t, err, "%d", lost.status)
			reqs, _ := s.received()
			require.Len(t, reqs, 1, "%d: sent once", lost.status)
		}
	})
	t.Run("a shed start is resent", func(t *testing.T) {
		t.Parallel()
		s := script(t, answer{status: http.StatusTooManyRequests, body: `{"error":"slow down","code":"rate_limited"}`}, item)
		d, err := client.New(s.srv.URL, fast).StartDeferred(ctxT(t), "order", req)
		require.NoError(t, err)
		require.Equal(t, 1, d.Starts)
		reqs, _ := s.received()
		require.Len(t, reqs, 2)
	})
}

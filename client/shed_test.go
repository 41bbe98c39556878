package client_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/api"
	"github.com/harvestd/harvest/client"
	"github.com/harvestd/harvest/engine"
)

// statusLog records the status of every answer a client receives.
type statusLog struct {
	mu       sync.Mutex
	statuses []int
	keys     []string
}

func (l *statusLog) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		l.mu.Lock()
		l.statuses = append(l.statuses, res.StatusCode)
		l.keys = append(l.keys, r.Header.Get("Idempotency-Key"))
		l.mu.Unlock()
	}
	return res, err
}

func (l *statusLog) seen() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]int(nil), l.statuses...)
}

func TestRateLimitedStartIsRetriedOnce(t *testing.T) {
	t.Parallel()
	// One request a second: the list takes the bucket, so the start's
	// first attempt gets 429 with Retry-After 1.
	s := setupServerWith(t, func(e *engine.Engine) api.Config {
		return api.Config{Gates: e, Limits: api.Limits{Rate: 1, Burst: 1}}
	})
	statuses := &statusLog{}
	c := client.New(s.url, client.WithHTTPClient(&http.Client{Transport: statuses}))
	_, err := c.List(ctxT(t), client.ListQuery{})
	require.NoError(t, err)
	res, err := c.Start(ctxT(t), "order", client.StartRequest{Input: waitingOrder, IdempotencyKey: "rl-order-1"})
	require.NoError(t, err)
	require.Equal(t, []int{http.StatusOK, http.StatusTooManyRequests, http.StatusCreated}, statuses.seen())
	require.Equal(t, []string{"", "rl-order-1", "rl-order-1"}, statuses.keys, "the retry resends the same key")
	require.NotNil(t, res.StartedFresh)
	require.True(t, *res.StartedFresh)
	// A keyless start is retried after a 429 too: it was refused before
	// any work, so the retry makes the only run.
	_, err = c.Start(ctxT(t), "order", client.StartRequest{Input: waitingOrder})
	require.NoError(t, err)
	require.Equal(t, http.StatusTooManyRequests, statuses.seen()[3])
	page, err := s.api.List(ctxT(t), client.ListQuery{WorkflowName: "order"})
	require.NoError(t, err)
	require.Len(t, page.Workflows, 2, "one run per start: no second run from a retry")
}

package client_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/client"
)

// answer is one canned reply of a scripted server.
type answer struct {
	status     int
	body       string
	retryAfter string
}

// scripted serves answers in order (the last one repeats) and records what
// it received.
type scripted struct {
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []seen
	at   []time.Time
}

func script(t *testing.T, answers ...answer) *scripted {
	t.Helper()
	s := &scripted{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		n := len(s.reqs)
		s.reqs = append(s.reqs, seen{method: r.Method, path: r.URL.EscapedPath(), header: r.Header.Clone(), body: raw})
		s.at = append(s.at, time.Now())
		s.mu.Unlock()
		a := answers[min(n, len(answers)-1)]
		if a.retryAfter != "" {
			w.Header().Set("Retry-After", a.retryAfter)
		}
		w.WriteHeader(a.status)
		_, _ = io.WriteString(w, a.body)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *scripted) received() ([]seen, []time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seen(nil), s.reqs...), append([]time.Time(nil), s.at...)
}

var unavailable = answer{status: http.StatusServiceUnavailable, body: `{"error":"shard moving","code":"unavailable"}`}

func TestRetries(t *testing.T) {
	t.Parallel()
	fast := client.WithRetryPolicy(client.RetryPolicy{InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond})

	t.Run("UnavailableIsRetriedWithTheSameKeyAndBody", func(t *testing.T) {
		t.Parallel()
		s := script(t, unavailable, answer{status: 503, body: "proxy says no"},
			answer{status: http.StatusCreated, body: `{"execution_id":"e1","started_fresh":true,"deduplicated":false}`})
		res, err := client.New(s.srv.URL, fast).Start(ctxT(t), "order", client.StartRequest{Input: map[string]int{"n": 1}, IdempotencyKey: "k-1"})
		require.NoError(t, err)
		require.Equal(t, "e1", res.ExecutionID)
		reqs, _ := s.received()
		require.Len(t, reqs, 3)
		for _, r := range reqs {
			require.Equal(t, "k-1", r.header.Get("Idempotency-Key"))
			require.JSONEq(t, `{"input":{"n":1}}`, string(r.body))
		}
	})

	t.Run("KeylessStartIsRetriedOn503", func(t *testing.T) {
		t.Parallel()
		s := script(t, unavailable, answer{status: http.StatusCreated, body: `{"execution_id":"e1"}`})
		_, err := client.New(s.srv.URL, fast).Start(ctxT(t), "order", client.StartRequest{})
		require.NoError(t, err, "a 503 did nothing: safe to resend")
	})

	t.Run("RetryAfterIsHonoured", func(t *testing.T) {
		t.Parallel()
		s := script(t, answer{status: 503, body: `{"error":"x","code":"unavailable"}`, retryAfter: "1"}, answer{status: 200, body: `{"workflows":[]}`})
		_, err := client.New(s.srv.URL, fast).List(ctxT(t), client.ListQuery{})
		require.NoError(t, err)
		_, at := s.received()
		require.Len(t, at, 2)
		require.GreaterOrEqual(t, at[1].Sub(at[0]), 900*time.Millisecond)
	})

	t.Run("GivesUpAfterMaxAttempts", func(t *testing.T) {
		t.Parallel()
		s := script(t, unavailable)
		_, err := client.New(s.srv.URL, client.WithRetryPolicy(client.RetryPolicy{MaxAttempts: 3, InitialBackoff: time.Millisecond})).
			Describe(ctxT(t), "e1")
		require.ErrorIs(t, err, client.ErrUnavailable)
		require.Equal(t, "shard moving (unavailable, HTTP 503)", err.Error(), "the last answer, unwrapped")
		reqs, _ := s.received()
		require.Len(t, reqs, 3)
	})

	t.Run("RetryAfterBeyondMaxElapsedEndsAtOnce", func(t *testing.T) {
		t.Parallel()
		s := script(t, answer{status: 503, body: `{"error":"x","code":"unavailable"}`, retryAfter: "60"})
		begin := time.Now()
		_, err := client.New(s.srv.URL, client.WithRetryPolicy(client.RetryPolicy{MaxElapsed: time.Second})).Describe(ctxT(t), "e1")
		require.ErrorIs(t, err, client.ErrUnavailable)
		reqs, _ := s.received()
		require.Len(t, reqs, 1, "no retry after the answer's 60 s")
		require.Less(t, time.Since(begin), 30*time.Second, "did not sleep the 60 s")
		var apiErr *client.Error
		require.ErrorAs(t, err, &apiErr)
		require.Equal(t, time.Minute, apiErr.RetryAfter)
	})

	t.Run("WithoutRetries", func(t *testing.T) {
		t.Parallel()
		s := script(t, unavailable)
		_, err := client.New(s.srv.URL, client.WithoutRetries()).Describe(ctxT(t), "e1")
		require.ErrorIs(t, err, client.ErrUnavailable)
		reqs, _ := s.received()
		require.Len(t, reqs, 1)
	})

	t.Run("NotRetried", func(t *testing.T) {
		t.Parallel()
		for _, a := range []answer{
			{status: 503, body: `{"error":"admission blocked","code":"admission_blocked","gate_id":"g","reason":"r"}`, retryAfter: "1"},
			{status: 404, body: `{"error":"nope","code":"not_found"}`},
			{status: 500, body: `{"error":"internal error","code":"internal"}`},
			{status: 502, body: "bad gateway"}, // a keyless POST may have been processed behind the proxy
		} {
			s := script(t, a)
			_, err := client.New(s.srv.URL, fast).Signal(ctxT(t), "e1", "go", nil, client.SignalOptions{})
			require.Error(t, err)
			reqs, _ := s.received()
			require.Len(t, reqs, 1, "%d %s", a.status, a.body)
		}
	})

	t.Run("ShedRequestsAreRetriedEvenOnceOnes", func(t *testing.T) {
		t.Parallel()
		for _, a := range []answer{
			{status: 429, body: `{"error":"over rate","code":"rate_limited"}`, retryAfter: "1"},
			{status: 503, body: `{"error":"busy","code":"overloaded"}`, retryAfter: "1"},
		} {
			s := script(t, a, answer{status: 201, body: `{"id":"0123456789abcdef","token":"t"}`})
			_, err := client.New(s.srv.URL, fast).CreateToken(ctxT(t), client.CreateTokenRequest{Scope: "read"})
			require.NoError(t, err, "%d %s: refused before any work, so even a token creation is resent", a.status, a.body)
			reqs, at := s.received()
			require.Len(t, reqs, 2)
			require.GreaterOrEqual(t, at[1].Sub(at[0]), 900*time.Millisecond, "after the Retry-After")
		}
	})

	t.Run("RateLimitedMatchesItsSentinel", func(t *testing.T) {
		t.Parallel()
		s := script(t, answer{status: 429, body: `{"error":"over rate","code":"rate_limited"}`})
		_, err := client.New(s.srv.URL, client.WithoutRetries()).List(ctxT(t), client.ListQuery{})
		require.ErrorIs(t, err, client.ErrRateLimited)
	})

	t.Run("KeyedSignalRetriedOn502", func(t *testing.T) {
		t.Parallel()
		s := script(t, answer{status: 502, body: "bad gateway"}, answer{status: 202, body: `{"ok":true,"signal_delivered":false}`})
		res, err := client.New(s.srv.URL, fast).Signal(ctxT(t), "e1", "go", nil, client.SignalOptions{IdempotencyKey: "s"})
		require.NoError(t, err)
		require.False(t, res.SignalDelivered)
	})

	t.Run("RefusedConnectionIsRetried", func(t *testing.T) {
		t.Parallel()
		s := script(t, unavailable)
		s.srv.Close()
		begin := time.Now()
		_, err := client.New(s.srv.URL, client.WithRetryPolicy(client.RetryPolicy{MaxAttempts: 3, InitialBackoff: 100 * time.Millisecond,
			MaxBackoff: 100 * time.Millisecond})).Start(ctxT(t), "order", client.StartRequest{})
		require.ErrorContains(t, err, s.srv.URL)
		require.GreaterOrEqual(t, time.Since(begin), 200*time.Millisecond, "two waits: nothing was sent, even a keyless start retries")
	})
}

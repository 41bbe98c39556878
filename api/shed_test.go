package api

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/auth"
	"github.com/harvestd/harvest/engine"
)

// withLimits sets the server's shedding limits.
func withLimits(l Limits) func(*Config, *auth.Table) {
	return func(c *Config, _ *auth.Table) { c.Limits = l }
}

// slowRefill is a rate whose bucket does not refill within a test.
const slowRefill = 0.001

func TestRateLimit(t *testing.T) {
	t.Run("TokenOverItsRateGets429OthersUnaffected", func(t *testing.T) {
		b := setupAuth(t, withLimits(Limits{Rate: slowRefill, Burst: 2}))
		for range 2 {
			require.Equal(t, http.StatusOK, b.as(t, "write", "GET", "/workflows", nil).Status)
		}
		r := b.as(t, "write", "GET", "/workflows", nil)
		requireError(t, r, http.StatusTooManyRequests, codeRateLimited)
		after, err := strconv.Atoi(r.Header.Get("Retry-After"))
		require.NoError(t, err, "Retry-After %q", r.Header.Get("Retry-After"))
		require.Equal(t, int(math.Ceil(1/slowRefill)), after, "the time until the bucket has room")
		for range 2 {
			require.Equal(t, http.StatusOK, b.as(t, "read", "GET", "/workflows", nil).Status, "another token has its own bucket")
		}
	})
	t.Run("RefusedBeforeAnyWorkKeyedReplaysIncluded", func(t *testing.T) {
		b := setupAuth(t, withLimits(Limits{Rate: slowRefill, Burst: 1}))
		start := map[string]any{"input": map[string]any{"activities": 0}}
		r := b.as(t, "write", "POST", "/workflows/noop_chain/start", start, "Idempotency-Key", "rl-1")
		require.Equal(t, http.StatusCreated, r.Status, "body %s", r.Raw)
		before := b.counts(t)
		requireError(t, b.as(t, "write", "POST", "/workflows/noop_chain/start", start, "Idempotency-Key", "rl-2"), http.StatusTooManyRequests, codeRateLimited)
		requireError(t, b.as(t, "write", "POST", "/workflows/noop_chain/start", start, "Idempotency-Key", "rl-1"), http.StatusTooManyRequests, codeRateLimited)
		require.Equal(t, before, b.counts(t), "no run, event or claim")
	})
	t.Run("ForwardedRequestsAreNotChargedAgain", func(t *testing.T) {
		b := setupAuth(t, withLimits(Limits{Rate: slowRefill, Burst: 1}))
		id := auth.Identity{TokenID: b.tokenID(t, "write"), Scope: auth.ScopeWrite}
		for range 3 {
			r := b.doRequest(t, b.nodeRequest(t, b.key, time.Now(), id, "GET", "/workflows", ""))
			require.Equal(t, http.StatusOK, r.Status, "body %s", r.Raw)
		}
		require.Equal(t, http.StatusOK, b.as(t, "write", "GET", "/workflows", nil).Status, "the token's own bucket is untouched")
	})
	t.Run("ABatchIsChargedPerItemBeforeAnyWork", func(t *testing.T) {
		b := setupAuth(t, withLimits(Limits{Rate: slowRefill, Burst: 5}))
		batch := func(n int) map[string]any {
			items := make([]any, n)
			for i := range items {
				items[i] = map[string]any{"workflow_name": "noop_chain", "input": map[string]any{"activities": 0}}
			}
			return map[string]any{"items": items}
		}
		r := b.as(t, "write", "POST", "/workflows/batch_start", batch(3))
		require.Equal(t, http.StatusOK, r.Status, "body %s", r.Raw)
		before := b.counts(t)
		r = b.as(t, "write", "POST", "/workflows/batch_start", batch(3))
		requireError(t, r, http.StatusTooManyRequests, codeRateLimited)
		require.NotEmpty(t, r.Header.Get("Retry-After"))
		require.Equal(t, before, b.counts(t), "refused whole, before any item ran")
		r = b.as(t, "write", "POST", "/workflows/batch_start", batch(1))
		require.Equal(t, http.StatusOK, r.Status, "the refused batch cost one request, as any refused request does: %s", r.Raw)
		requireError(t, b.as(t, "write", "GET", "/workflows", nil), http.StatusTooManyRequests, codeRateLimited)
		before = b.counts(t)
		requireError(t, b.as(t, "admin", "POST", "/workflows/batch_start", batch(6)), http.StatusRequestEntityTooLarge, codeTooLarge)
		require.Equal(t, before, b.counts(t), "a batch larger than the bucket never runs")
	})
	t.Run("AStreamIsChargedPerPage", func(t *testing.T) {
		b := setupAuth(t, withLimits(Limits{Rate: slowRefill, Burst: 3}))
		b.server.streamPage = 16 << 10 // each signal below is a page of its own
		r := b.as(t, "write", "POST", "/workflows/block/start", map[string]any{})
		require.Equal(t, http.StatusCreated, r.Status, "body %s", r.Raw)
		id := r.Body["execution_id"].(string)
		signalPayloads(t, b.engine, id, strings.Repeat("a", 40_000), strings.Repeat("b", 40_000), strings.Repeat("c", 40_000))
		req, err := http.NewRequest(http.MethodGet, b.url+"/workflows/"+id+"/events/stream", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", b.tokens["read"])
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		t.Cleanup(func() { res.Body.Close() })
		require.Equal(t, http.StatusOK, res.StatusCode)
		s := &stream{t: t, res: res, rd: bufio.NewReader(res.Body)}
		s.until(string(harvest.EventSignalReceived))
		s.until(string(harvest.EventSignalReceived))
		// The request paid 1, the pages of the two signals 1 each.
		requireError(t, b.as(t, "read", "GET", "/workflows", nil), http.StatusTooManyRequests, codeRateLimited)
		require.Equal(t, http.StatusOK, b.as(t, "write", "GET", "/workflows", nil).Status, "another token has its own bucket")
	})
	t.Run("OpenRoutesAreNotLimited", func(t *testing.T) {
		b := setupAuth(t, withLimits(Limits{Rate: slowRefill, Burst: 1}))
		for range 3 {
			require.Equal(t, http.StatusOK, b.send(t, "none", "GET", "/healthz").Status)
		}
	})
}

// hold keeps requests in flight until the test ends.
type hold struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	ctx    context.Context
	client *http.Client
}

func newHold(t *testing.T) *hold {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h := &hold{ctx: ctx, cancel: cancel, client: &http.Client{Transport: &http.Transport{}}}
	t.Cleanup(func() {
		cancel()
		h.wg.Wait()
		h.client.CloseIdleConnections()
	})
	return h
}

// send sends a request that stays in flight until the test ends.
func (h *hold) send(method, url, auth string, body io.Reader) {
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		req, err := http.NewRequestWithContext(h.ctx, method, url, body)
		if err != nil {
			return
		}
		req.Header.Set("Authorization", auth)
		if res, err := h.client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
	}()
}

// slowBody is a request body that never ends while the test runs.
func (h *hold) slowBody(t *testing.T) io.Reader {
	t.Helper()
	r, w := io.Pipe()
	go func() {
		_, _ = w.Write([]byte(`{"input":`))
		<-h.ctx.Done()
		w.CloseWithError(h.ctx.Err())
	}()
	return r
}

// inFlight waits until n requests of the kind hold slots.
func requireInFlight(t *testing.T, slots chan struct{}, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return len(slots) == n }, 30*time.Second, 10*time.Millisecond,
		"want %d in flight, have %d", n, len(slots))
}

func TestInFlightLimits(t *testing.T) {
	start := map[string]any{"input": map[string]any{"activities": 0}}
	t.Run("OrdinaryOverTheLimitGets503Overloaded", func(t *testing.T) {
		b := setupAuth(t, withLimits(Limits{MaxInFlight: 1}))
		h := newHold(t)
		h.send("POST", b.url+"/workflows/noop_chain/start", b.tokens["write"], h.slowBody(t))
		requireInFlight(t, b.server.shedder.ordinary, 1)
		before := b.counts(t)
		r := b.as(t, "write", "POST", "/workflows/noop_chain/start", start, "Idempotency-Key", "busy-1")
		requireError(t, r, http.StatusServiceUnavailable, codeOverloaded)
		require.Equal(t, "1", r.Header.Get("Retry-After"))
		require.Equal(t, before, b.counts(t), "refused before any work")
		require.Equal(t, http.StatusOK, b.send(t, "none", "GET", "/healthz").Status, "open routes are never shed")
	})
	t.Run("LongPollsDoNotMakeAnOrdinaryStartWait", func(t *testing.T) {
		// A long poll reads its run once per poll interval: a long one
		// keeps 500 of them from loading the database.
		tb := setupWith(t, func(c *engine.Config) { c.PollInterval = time.Minute })
		b := setupAuthOn(t, tb, withLimits(Limits{MaxInFlight: 2, MaxLongLivedPerToken: 500}))
		r := b.as(t, "write", "POST", "/workflows/block/start", map[string]any{})
		require.Equal(t, http.StatusCreated, r.Status, "body %s", r.Raw)
		h := newHold(t)
		for range 500 {
			h.send("GET", b.url+"/workflows/"+r.Body["execution_id"].(string)+"/result?wait=25s", b.tokens["read"], nil)
		}
		requireInFlight(t, b.server.shedder.long, 500)
		r = b.as(t, "write", "POST", "/workflows/noop_chain/start", start)
		require.Equal(t, http.StatusCreated, r.Status, "an ordinary start is admitted beside 500 long polls: %s", r.Raw)
	})
	t.Run("LongLivedOverTheirLimitGet503OrdinaryStillServed", func(t *testing.T) {
		b := setupAuth(t, withLimits(Limits{MaxLongLived: 1}))
		r := b.as(t, "write", "POST", "/workflows/block/start", map[string]any{})
		require.Equal(t, http.StatusCreated, r.Status, "body %s", r.Raw)
		id := r.Body["execution_id"].(string)
		h := newHold(t)
		h.send("GET", b.url+"/workflows/"+id+"/events/stream", b.tokens["read"], nil)
		requireInFlight(t, b.server.shedder.long, 1)
		requireError(t, b.as(t, "read", "GET", "/workflows/"+id+"/result?wait=5s", nil), http.StatusServiceUnavailable, codeOverloaded)
		require.Equal(t, http.StatusNoContent, b.as(t, "read", "GET", "/workflows/"+id+"/result", nil).Status, "no wait: an ordinary request (still running)")
	})
}

func TestLimitsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		l    Limits
		ok   bool
	}{
		{"Zero", Limits{}, true},
		{"Set", Limits{Rate: 50, Burst: 100, MaxInFlight: 10, MaxLongLived: 10}, true},
		{"NegativeRate", Limits{Rate: -1}, false},
		{"NaNRate", Limits{Rate: math.NaN()}, false},
		{"InfiniteRate", Limits{Rate: math.Inf(1)}, false},
		{"NegativeBurst", Limits{Burst: -1}, false},
		{"NegativeInFlight", Limits{MaxInFlight: -1}, false},
		{"NegativeLongLived", Limits{MaxLongLived: -1}, false},
		{"NegativeLongLivedPerToken", Limits{MaxLongLivedPerToken: -1}, false},
		{"StreamMemoryOfOnePage", Limits{StreamMemory: StreamMemoryMin}, true},
		{"StreamMemoryUnderOnePage", Limits{StreamMemory: StreamMemoryMin - 1}, false},
		{"NegativeStreamMemory", Limits{StreamMemory: -1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.l.Validate()
			if tc.ok {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			_, err = New(Config{Limits: tc.l}, nil)
			require.Error(t, err, "New refuses it too")
		})
	}
	t.Run("Defaults", func(t *testing.T) {
		d := Limits{Rate: 2.5}.withDefaults()
		require.Equal(t, Limits{Rate: 2.5, Burst: 3, MaxInFlight: MaxInFlightDefault, MaxLongLived: MaxLongLivedDefault,
			MaxLongLivedPerToken: MaxLongLivedPerTokenDefault, StreamMemory: StreamMemoryDefault}, d)
		require.Equal(t, 32, MaxLongLivedPerTokenDefault)
		require.Equal(t, 1, Limits{}.withDefaults().Burst)
	})
}

// TestOpenAPIListsShedding: every route that sheds load documents its
// 429 and 503.
func TestOpenAPIListsShedding(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]struct {
			Responses map[string]json.RawMessage `json:"responses"`
		} `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(openAPIDoc, &doc))
	param := regexp.MustCompile(`\{[^}]+\}|[:*][a-z_]+`)
	ops := map[string]map[string]json.RawMessage{}
	for p, methods := range doc.Paths {
		for m, op := range methods {
			ops[strings.ToUpper(m)+" "+param.ReplaceAllString(p, "{}")] = op.Responses
		}
	}
	for route, a := range documented {
		if a.class != classBearer {
			continue
		}
		res := ops[param.ReplaceAllString(route, "{}")]
		require.Contains(t, res, "429", route)
		require.Contains(t, res, "503", route)
	}
}

func TestRetryAfterSeconds(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		d    time.Duration
		want int
	}{
		{time.Hour, 3600},
		{time.Hour - 1500*time.Millisecond, 3599},
		{200 * time.Millisecond, 1},
		{time.Second, 1},
	} {
		t.Run(c.d.String(), func(t *testing.T) {
			require.Equal(t, c.want, retryAfterSeconds(c.d), "never earlier than the slot")
		})
	}
}

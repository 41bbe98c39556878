package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/loop"
)

// downstream is a test service an HTTP activity calls: it answers from a
// script (one answer per request, the last repeated), records each
// request's headers and time, and counts one effect per Idempotency-Key,
// as a deduplicating service (Stripe) would.
type downstream struct {
	*httptest.Server
	mu       sync.Mutex
	answers  []answer
	requests []seen
	effects  map[string]int
}

type answer struct {
	status  int
	body    string
	headers map[string]string
}

type seen struct {
	key, attempt, execution, auth string
	body                          string
	at                            time.Time
}

func newDownstream(t *testing.T, answers ...answer) *downstream {
	d := &downstream{answers: answers, effects: map[string]int{}}
	d.Server = httptest.NewServer(http.HandlerFunc(d.serve))
	t.Cleanup(d.Close)
	return d
}

func (d *downstream) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	d.mu.Lock()
	key := r.Header.Get("Idempotency-Key")
	d.requests = append(d.requests, seen{key: key, attempt: r.Header.Get("Harvest-Attempt"),
		execution: r.Header.Get("Harvest-Execution-Id"), auth: r.Header.Get("Authorization"), body: string(body), at: time.Now()})
	a := d.answers[min(len(d.requests), len(d.answers))-1]
	if a.status/100 == 2 && d.effects[key] == 0 {
		d.effects[key]++
	}
	d.mu.Unlock()
	for k, v := range a.headers {
		w.Header().Set(k, v)
	}
	w.WriteHeader(a.status)
	_, _ = io.WriteString(w, a.body)
}

func (d *downstream) seen() []seen {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]seen(nil), d.requests...)
}

var loopbackOnly = CallbackPolicy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}

// registerHTTPCall registers workflow "http_call" running HTTP activity
// "charge" against url.
func (b *testBundle) registerHTTPCall(t *testing.T, url string) {
	charge := harvest.NewHTTPActivity[map[string]any, json.RawMessage]("charge", url, harvest.HTTPActivityOptions{
		Headers:  map[string]string{"Authorization": "Bearer downstream-secret"},
		Activity: harvest.ActivityOptions{Retry: &harvest.RetryPolicy{MaxAttempts: 4, InitialInterval: 10 * time.Millisecond}},
	})
	require.NoError(t, b.reg.Register(charge, harvest.NewWorkflow("http_call", func(ctx harvest.Context, in map[string]any) (json.RawMessage, error) {
		return charge.Execute(ctx, in).Get(ctx)
	})))
}

func TestHTTPActivity(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, policy CallbackPolicy, answers ...answer) (*downstream, Execution) {
		d := newDownstream(t, answers...)
		b := setup(t)
		b.registerHTTPCall(t, d.URL+"/charge")
		e := b.engine(t, func(c *Config) { c.CallbackPolicy = policy })
		r := start(t, e, StartRequest{WorkflowName: "http_call", Input: []byte(`{"amount_cents": 4200}`)})
		return d, waitClosed(t, e, r.ExecutionID)
	}
	failure := func(t *testing.T, x Execution) harvest.ErrorInfo {
		require.Equal(t, StateFailed, x.State)
		var info harvest.ErrorInfo
		require.NoError(t, json.Unmarshal(x.Error, &info), "%s", x.Error)
		return info
	}

	t.Run("SameKeyOnEveryAttempt", func(t *testing.T) {
		d, x := run(t, loopbackOnly, answer{status: 503}, answer{status: 500, body: "oops"}, answer{status: 200, body: `{"charged": true}`})
		require.Equal(t, StateCompleted, x.State, "%s", x.Error)
		require.JSONEq(t, `{"charged": true}`, string(x.Output))
		reqs := d.seen()
		require.Len(t, reqs, 3)
		for i, r := range reqs {
			require.NotEmpty(t, r.key)
			require.Equal(t, reqs[0].key, r.key, "attempt %d", i+1)
			require.Equal(t, fmt.Sprint(i+1), r.attempt)
			require.Equal(t, x.ExecutionID.String(), r.execution)
			require.Equal(t, "Bearer downstream-secret", r.auth)
			require.JSONEq(t, `{"amount_cents": 4200}`, r.body)
		}
		require.Equal(t, 1, d.effects[reqs[0].key])
	})

	t.Run("ClientErrorFailsAtOnce", func(t *testing.T) {
		d, x := run(t, loopbackOnly, answer{status: 400, body: `{"error": "card declined"}`})
		info := failure(t, x)
		require.Equal(t, "http_400", info.Type, "%+v", info)
		require.True(t, info.NonRetryable)
		require.JSONEq(t, `{"error": "card declined"}`, string(info.Details))
		require.Len(t, d.seen(), 1)
	})

	t.Run("ConflictAndTimeoutAreRetried", func(t *testing.T) {
		d, x := run(t, loopbackOnly, answer{status: 409}, answer{status: 408}, answer{status: 201, body: `7`})
		require.Equal(t, StateCompleted, x.State, "%s", x.Error)
		require.JSONEq(t, `7`, string(x.Output))
		require.Len(t, d.seen(), 3)
	})

	t.Run("TooManyRequestsHonoursRetryAfter", func(t *testing.T) {
		d, x := run(t, loopbackOnly, answer{status: 429, headers: map[string]string{"Retry-After": "1"}}, answer{status: 200, body: `1`})
		require.Equal(t, StateCompleted, x.State, "%s", x.Error)
		reqs := d.seen()
		require.Len(t, reqs, 2)
		require.GreaterOrEqual(t, reqs[1].at.Sub(reqs[0].at), time.Second, "the retry waited for Retry-After, not the 10 ms backoff")
	})

	t.Run("RedirectIsNotFollowed", func(t *testing.T) {
		d, x := run(t, loopbackOnly, answer{status: 307, headers: map[string]string{"Location": "http://169.254.169.254/"}})
		require.Equal(t, "http_307", failure(t, x).Type)
		require.Len(t, d.seen(), 1)
	})

	t.Run("AnswersThatAreNotJSONOrEmpty", func(t *testing.T) {
		_, x := run(t, loopbackOnly, answer{status: 200, body: "<html>"})
		require.Equal(t, "http_invalid_answer", failure(t, x).Type)
		_, x = run(t, loopbackOnly, answer{status: 204})
		require.Equal(t, StateCompleted, x.State, "%s", x.Error)
		require.JSONEq(t, `null`, string(x.Output))
	})

	t.Run("LoopbackRefusedWithoutAllowList", func(t *testing.T) {
		d, x := run(t, CallbackPolicy{}, answer{status: 200, body: `1`})
		info := failure(t, x)
		require.Equal(t, "url_refused", info.Type, "%+v", info)
		require.True(t, info.NonRetryable)
		require.Empty(t, d.seen(), "no request left the engine")
	})
}

// TestHTTPActivityCrashBetweenPostAndRecord: the engine dies after the
// downstream answered but before the completion is recorded; the next
// owner's attempt sends the same Idempotency-Key, so the deduplicating
// downstream makes one effect.
func TestHTTPActivityCrashBetweenPostAndRecord(t *testing.T) {
	t.Parallel()
	d := newDownstream(t, answer{status: 200, body: `{"charged": true}`})
	b := setup(t)
	b.registerHTTPCall(t, d.URL+"/charge")
	hit, frozen := make(chan struct{}), make(chan struct{})
	var crashed atomic.Bool
	e1 := b.engine(t, func(c *Config) {
		c.CallbackPolicy = loopbackOnly
		c.crashHook = func(ctx context.Context, p loop.CrashPoint) error {
			if !crashed.Load() && (p != crashLoaded || len(d.seen()) == 0) {
				return nil
			}
			if crashed.CompareAndSwap(false, true) {
				close(hit)
			}
			select {
			case <-ctx.Done():
			case <-frozen:
			}
			return errCrashed
		}
	})
	r := start(t, e1, StartRequest{WorkflowName: "http_call", Input: []byte(`{"amount_cents": 1}`)})
	select {
	case <-hit:
	case <-time.After(20 * time.Second):
		t.Fatal("the completion was never about to be recorded")
	}
	crash(e1)
	close(frozen)
	e2 := b.engine(t, func(c *Config) { c.CallbackPolicy = loopbackOnly })
	x := waitClosed(t, e2, r.ExecutionID)
	require.Equal(t, StateCompleted, x.State, "%s", x.Error)
	reqs := d.seen()
	require.GreaterOrEqual(t, len(reqs), 2, "the next owner sent the request again")
	for _, q := range reqs {
		require.Equal(t, reqs[0].key, q.key)
	}
	require.Equal(t, map[string]int{reqs[0].key: 1}, d.effects, "one effect")
	requireSoundHistory(t, b.pool, r.ExecutionID)
}

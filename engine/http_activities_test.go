package engine

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/httpactivity"
)

// resolverMap is an ActivityResolver over a fixed map.
type resolverMap map[string]httpactivity.Config

func (m resolverMap) HTTPActivity(name string) (httpactivity.Config, bool, error) {
	a, ok := m[name]
	return a, ok, nil
}

// laggingResolver cannot tell for its first behind lookups, as a
// restarted replica of the raft catalog that may trail its leader's.
type laggingResolver struct {
	resolverMap
	behind atomic.Int32
}

func (l *laggingResolver) HTTPActivity(name string) (httpactivity.Config, bool, error) {
	if l.behind.Add(-1) >= 0 {
		return httpactivity.Config{}, false, errors.New("catalog may trail the leader's")
	}
	return l.resolverMap.HTTPActivity(name)
}

// registerRemoteCall registers workflow "remote_call" calling the
// runtime-registered activity name, with opts when given.
func (b *testBundle) registerRemoteCall(t *testing.T, name string, opts ...harvest.ActivityOptions) {
	charge := harvest.NewRemoteActivity[map[string]any, json.RawMessage](name)
	require.NoError(t, b.reg.Register(harvest.NewWorkflow("remote_call", func(ctx harvest.Context, in map[string]any) (json.RawMessage, error) {
		return charge.Execute(ctx, in, opts...).Get(ctx)
	})))
}

func TestRuntimeHTTPActivity(t *testing.T) {
	t.Parallel()
	fastRetry := func(attempts int) *httpactivity.Retry {
		return &httpactivity.Retry{MaxAttempts: attempts, InitialInterval: 10 * time.Millisecond}
	}
	run := func(t *testing.T, acts resolverMap, name string, opts []harvest.ActivityOptions) Execution {
		t.Helper()
		b := setup(t)
		b.registerRemoteCall(t, name, opts...)
		e := b.engine(t, func(c *Config) { c.CallbackPolicy, c.HTTPActivities = loopbackOnly, acts })
		r := start(t, e, StartRequest{WorkflowName: "remote_call", Input: []byte(`{"amount_cents": 4200}`)})
		return waitClosed(t, e, r.ExecutionID)
	}
	failure := func(t *testing.T, x Execution) harvest.ErrorInfo {
		t.Helper()
		require.Equal(t, StateFailed, x.State)
		var info harvest.ErrorInfo
		require.NoError(t, json.Unmarshal(x.Error, &info), "%s", x.Error)
		return info
	}

	t.Run("SameKeyOnEveryAttempt", func(t *testing.T) {
		d := newDownstream(t, answer{status: 503}, answer{status: 200, body: `{"charged": true}`})
		acts := resolverMap{"charge": {Name: "charge", URL: d.URL + "/charge",
			Headers: map[string]string{"Authorization": "Bearer downstream-secret"}, Retry: fastRetry(3)}}
		x := run(t, acts, "charge", nil)
		require.Equal(t, StateCompleted, x.State, "%s", x.Error)
		require.JSONEq(t, `{"charged": true}`, string(x.Output))
		reqs := d.seen()
		require.Len(t, reqs, 2)
		for i, r := range reqs {
			require.NotEmpty(t, r.key)
			require.Equal(t, reqs[0].key, r.key, "attempt %d", i+1)
			require.Equal(t, x.ExecutionID.String(), r.execution)
			require.Equal(t, "Bearer downstream-secret", r.auth, "the registration's headers")
			require.JSONEq(t, `{"amount_cents": 4200}`, r.body)
		}
		require.Equal(t, map[string]int{reqs[0].key: 1}, d.effects, "one effect")
	})

	t.Run("RegistrationRetryApplies", func(t *testing.T) {
		d := newDownstream(t, answer{status: 503}, answer{status: 503}, answer{status: 200, body: `1`})
		acts := resolverMap{"charge": {Name: "charge", URL: d.URL, Retry: fastRetry(2)}}
		info := failure(t, run(t, acts, "charge", nil))
		require.Equal(t, "http_503", info.Type, "%+v", info)
		require.Len(t, d.seen(), 2, "the registration's two attempts, not the default three")
	})

	t.Run("WorkflowRetryWins", func(t *testing.T) {
		d := newDownstream(t, answer{status: 503}, answer{status: 200, body: `1`})
		acts := resolverMap{"charge": {Name: "charge", URL: d.URL, Retry: fastRetry(1)}}
		opts := []harvest.ActivityOptions{{Retry: &harvest.RetryPolicy{MaxAttempts: 3, InitialInterval: 10 * time.Millisecond}}}
		x := run(t, acts, "charge", opts)
		require.Equal(t, StateCompleted, x.State, "%s", x.Error)
		require.Len(t, d.seen(), 2)
	})

	t.Run("RegistrationTimeoutBoundsEachAttempt", func(t *testing.T) {
		var calls atomic.Int32
		release := make(chan struct{})
		slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if calls.Add(1) == 1 {
				select { // the first attempt hangs until it times out
				case <-r.Context().Done():
				case <-release:
				}
				return
			}
			_, _ = w.Write([]byte(`"late"`))
		}))
		t.Cleanup(slow.Close)
		t.Cleanup(func() { close(release) })
		acts := resolverMap{"charge": {Name: "charge", URL: slow.URL, Timeout: 200 * time.Millisecond, Retry: fastRetry(2)}}
		x := run(t, acts, "charge", nil)
		require.Equal(t, StateCompleted, x.State, "%s", x.Error)
		require.JSONEq(t, `"late"`, string(x.Output))
		require.EqualValues(t, 2, calls.Load())
	})

	t.Run("UnregisteredNameFailsAtOnce", func(t *testing.T) {
		info := failure(t, run(t, resolverMap{}, "nope", nil))
		require.Equal(t, harvest.ErrorTypeActivityNotRegistered, info.Type, "%+v", info)
		require.True(t, info.NonRetryable)
	})

	t.Run("ACatalogThatCannotTellIsRetried", func(t *testing.T) {
		d := newDownstream(t, answer{status: 200, body: `"charged"`})
		b := setup(t)
		b.registerRemoteCall(t, "charge", harvest.ActivityOptions{
			Retry: &harvest.RetryPolicy{MaxAttempts: 3, InitialInterval: 10 * time.Millisecond}})
		acts := &laggingResolver{resolverMap: resolverMap{"charge": {Name: "charge", URL: d.URL}}}
		acts.behind.Store(1)
		e := b.engine(t, func(c *Config) { c.CallbackPolicy, c.HTTPActivities = loopbackOnly, acts })
		r := start(t, e, StartRequest{WorkflowName: "remote_call", Input: []byte(`{}`)})
		x := waitClosed(t, e, r.ExecutionID)
		require.Equal(t, StateCompleted, x.State, "%s", x.Error)
		require.JSONEq(t, `"charged"`, string(x.Output))
		require.Len(t, d.seen(), 1, "the lagging lookup sent nothing")
	})

	t.Run("GoActivityWinsOverRegistration", func(t *testing.T) {
		d := newDownstream(t, answer{status: 200, body: `"http"`})
		b := setup(t)
		b.registerRemoteCall(t, "charge")
		require.NoError(t, b.reg.Register(harvest.NewActivity("charge", func(*harvest.ActivityContext, map[string]any) (string, error) {
			return "go", nil
		})))
		acts := resolverMap{"charge": {Name: "charge", URL: d.URL}}
		e := b.engine(t, func(c *Config) { c.CallbackPolicy, c.HTTPActivities = loopbackOnly, acts })
		r := start(t, e, StartRequest{WorkflowName: "remote_call", Input: []byte(`{}`)})
		x := waitClosed(t, e, r.ExecutionID)
		require.JSONEq(t, `"go"`, string(x.Output))
		require.Empty(t, d.seen())
	})
}

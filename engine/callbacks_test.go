package engine

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/harvestd/harvest/engine/internal/maint"
	"github.com/stretchr/testify/require"
)

func TestCallbackDelivery(t *testing.T) {
	b := setup(t)
	got := make(chan map[string]any, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var v map[string]any
		_ = json.Unmarshal(body, &v)
		v["idempotency_key"] = r.Header.Get("Idempotency-Key")
		got <- v
	}))
	t.Cleanup(srv.Close)
	e := b.engine(t, func(c *Config) {
		c.CallbackPolicy = CallbackPolicy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
		// No backstop tick within the test: only the close's wake can
		// deliver the callback.
		c.PollInterval = time.Hour
	})

	t.Run("AClosedRunsCallbackIsDelivered", func(t *testing.T) {
		// The no-op run closes inside its start; the close wakes the
		// callback loop, whose read finds the callback due.
		res := start(t, e, StartRequest{WorkflowName: "noop", Input: raw(t, "hi"), Callbacks: []Callback{{URL: srv.URL}}})
		select {
		case v := <-got:
			require.Equal(t, res.ExecutionID.String(), v["execution_id"])
			require.Equal(t, StateCompleted, v["state"])
			require.Equal(t, "hi", v["output"])
			require.Equal(t, maint.CallbackKey(res.ExecutionID, 0), v["idempotency_key"])
		case <-ctxT(t).Done():
			t.Fatal("no callback delivered")
		}
		eventually(t, "the callback is marked delivered", func() bool {
			return countRows(t, b, `SELECT count(*) FROM harvest_callbacks WHERE execution_id = $1 AND status = 'delivered'`,
				res.ExecutionID) == 1
		})
	})

	t.Run("ATerminatedRunsCallbackIsDelivered", func(t *testing.T) {
		// A close by the single path (no write set) wakes the loop too.
		res := start(t, e, StartRequest{WorkflowName: "block", Input: raw(t, "x"), Callbacks: []Callback{{URL: srv.URL}}})
		_, err := e.Terminate(ctxT(t), res.ExecutionID, "test")
		require.NoError(t, err)
		select {
		case v := <-got:
			require.Equal(t, res.ExecutionID.String(), v["execution_id"])
			require.Equal(t, StateTerminated, v["state"])
		case <-ctxT(t).Done():
			t.Fatal("no callback delivered")
		}
	})
}

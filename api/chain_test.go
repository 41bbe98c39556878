package api

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/demo"
)

// TestContinueAsNewChain covers the HTTP face of a continue-as-new chain
// (the demo counter, continuing after every signal): a keyed start's
// replay names the first run and the current one, describe links the
// runs, a signal or cancel to an old id reaches the current run, and a
// start or result that waits answers the chain's end.
func TestContinueAsNewChain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	path := "/workflows/" + demo.CounterName + "/start"
	input := map[string]any{"input": demo.CounterInput{Every: 1, Until: 3}}
	first := b.do(t, "POST", path, input, "Idempotency-Key", "chain-1")
	require.Equal(t, http.StatusCreated, first.Status, "%s", first.Raw)
	id := first.Body["execution_id"].(string)
	require.NotContains(t, first.Body, "latest_execution_id")
	addSignal := func(to, sig string) response {
		r := b.do(t, "POST", "/workflows/"+to+"/signal/"+demo.CounterAddSignal, map[string]any{"id": sig, "n": 1},
			"Idempotency-Key", "sig-"+sig)
		require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Raw)
		return r
	}
	addSignal(id, "a")
	var next string
	require.Eventually(t, func() bool {
		d := b.do(t, "GET", "/workflows/"+id, nil)
		x := d.Body["execution"].(map[string]any)
		next, _ = x["continued_to"].(string)
		return x["state"] == "CONTINUED_AS_NEW" && next != ""
	}, 20*time.Second, 10*time.Millisecond)

	t.Run("KeyedReplayNamesTheFirstRunAndTheLatest", func(t *testing.T) {
		again := b.do(t, "POST", path, input, "Idempotency-Key", "chain-1")
		require.Equal(t, http.StatusOK, again.Status)
		require.Equal(t, id, again.Body["execution_id"])
		require.Equal(t, "CONTINUED_AS_NEW", again.Body["state"])
		require.Equal(t, next, again.Body["latest_execution_id"])
		require.Equal(t, "RUNNING", again.Body["latest_state"])
	})

	t.Run("DescribeLinksTheRuns", func(t *testing.T) {
		x := b.do(t, "GET", "/workflows/"+next, nil).Body["execution"].(map[string]any)
		require.Equal(t, id, x["chain_id"])
		require.Equal(t, id, x["continued_from"])
		require.NotContains(t, x, "continued_to")
	})

	t.Run("ASignalToTheOldIdReachesTheCurrentRun", func(t *testing.T) {
		r := addSignal(id, "a") // a retry: the chain has the key
		require.Equal(t, false, r.Body["signal_delivered"])
		r = addSignal(next, "a")
		require.Equal(t, false, r.Body["signal_delivered"])
		r = addSignal(id, "b")
		require.Equal(t, true, r.Body["signal_delivered"])
		require.Equal(t, next, r.Body["current_execution_id"])
	})

	t.Run("StartAndResultWaitForTheChainsEnd", func(t *testing.T) {
		waited := make(chan response, 2)
		go func() { waited <- b.do(t, "POST", path+"?wait=20s", input, "Idempotency-Key", "chain-1") }()
		go func() { waited <- b.do(t, "GET", "/workflows/"+id+"/result?wait=20s", nil) }()
		var third string
		require.Eventually(t, func() bool {
			x := b.do(t, "GET", "/workflows/"+next, nil).Body["execution"].(map[string]any)
			third, _ = x["continued_to"].(string)
			return third != ""
		}, 20*time.Second, 10*time.Millisecond)
		addSignal(id, "c")
		for range 2 {
			r := <-waited
			res := r.Body
			if r.Status == http.StatusOK && r.Body["result"] != nil {
				res = r.Body["result"].(map[string]any)
			}
			require.Equal(t, "COMPLETED", res["state"], "%s", r.Raw)
			require.Equal(t, third, res["execution_id"], "the chain's last run")
			out, err := json.Marshal(res["output"])
			require.NoError(t, err)
			require.JSONEq(t, `{"count":3,"sum":3,"ids":["a","b","c"],"runs":3}`, string(out))
		}
	})

	t.Run("CancelOfAnOldIdReachesTheCurrentRun", func(t *testing.T) {
		other := b.do(t, "POST", path, map[string]any{"input": demo.CounterInput{Every: 1, Until: 3}})
		oid := other.Body["execution_id"].(string)
		r := b.do(t, "POST", "/workflows/"+oid+"/signal/"+demo.CounterAddSignal, map[string]any{"id": "x", "n": 1})
		require.Equal(t, http.StatusAccepted, r.Status)
		var cur string
		require.Eventually(t, func() bool {
			x := b.do(t, "GET", "/workflows/"+oid, nil).Body["execution"].(map[string]any)
			cur, _ = x["continued_to"].(string)
			return cur != ""
		}, 20*time.Second, 10*time.Millisecond)
		c := b.do(t, "POST", "/workflows/"+oid+"/cancel", map[string]any{"reason": "done"})
		require.Equal(t, http.StatusOK, c.Status, "%s", c.Raw)
		require.Equal(t, cur, c.Body["current_execution_id"])
		res := b.do(t, "GET", "/workflows/"+oid+"/result?wait=20s", nil)
		require.Equal(t, "CANCELLED", res.Body["state"], "%s", res.Raw)
		require.Equal(t, cur, res.Body["execution_id"])
	})
}

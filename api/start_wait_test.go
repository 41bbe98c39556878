package api

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/demo"
)

// TestStartThatWaits covers POST /workflows/{name}/start?wait=: the answer
// of a run that closes in time carries its result, as GET …/result has it.
func TestStartThatWaits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	path := "/workflows/" + demo.NoopChainName + "/start"
	input := map[string]any{"input": map[string]int{"activities": 1}}

	var first response
	t.Run("FreshRunThatCompletes", func(t *testing.T) {
		first = b.do(t, "POST", path+"?wait=20s", input, "Idempotency-Key", "w-1")
		require.Equal(t, http.StatusCreated, first.Status, "%s", first.Raw)
		id := first.Body["execution_id"].(string)
		res, ok := first.Body["result"].(map[string]any)
		require.True(t, ok, "no result: %s", first.Raw)
		require.Equal(t, "COMPLETED", res["state"])
		require.Equal(t, id, res["execution_id"])

		read := b.do(t, "GET", "/workflows/"+id+"/result", nil)
		require.Equal(t, http.StatusOK, read.Status)
		require.Equal(t, read.Body, res, "the start's result is the stored one")
	})

	t.Run("ReplayWaitsAndAnswersTheSameResult", func(t *testing.T) {
		again := b.do(t, "POST", path+"?wait=20s", input, "Idempotency-Key", "w-1")
		require.Equal(t, http.StatusOK, again.Status, "%s", again.Raw)
		require.Equal(t, true, again.Body["deduplicated"])
		require.Equal(t, first.Body["execution_id"], again.Body["execution_id"])
		require.Equal(t, first.Body["result"], again.Body["result"])
	})

	t.Run("NoWaitNoResult", func(t *testing.T) {
		r := b.do(t, "POST", path, input, "Idempotency-Key", "w-1")
		require.Equal(t, http.StatusOK, r.Status)
		require.NotContains(t, r.Body, "result")
		r = b.do(t, "POST", path+"?wait=0", input)
		require.Equal(t, http.StatusCreated, r.Status)
		require.NotContains(t, r.Body, "result")
	})

	t.Run("UnkeyedStartWaits", func(t *testing.T) {
		r := b.do(t, "POST", path+"?wait=20", input)
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
		require.Equal(t, "COMPLETED", r.Body["result"].(map[string]any)["state"])
	})

	t.Run("RunStillOpenWhenTheWaitEnds", func(t *testing.T) {
		const wait = 300 * time.Millisecond
		began := time.Now()
		r := b.do(t, "POST", "/workflows/block/start?wait="+wait.String(), map[string]any{"workflow_id": "w-open"})
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
		require.GreaterOrEqual(t, time.Since(began), wait, "the start waited for the run before answering")
		require.Equal(t, "RUNNING", r.Body["state"])
		require.NotContains(t, r.Body, "result")
	})

	t.Run("BadWaitStartsNothing", func(t *testing.T) {
		before := b.counts(t)
		for _, w := range []string{"soon", "-1s"} {
			requireError(t, b.do(t, "POST", path+"?wait="+w, input, "Idempotency-Key", "w-bad"),
				http.StatusBadRequest, codeInvalidArgument)
		}
		require.Equal(t, before, b.counts(t))
	})
}

package api

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// results are a batch answer's per-item results.
func results(t *testing.T, r response) []map[string]any {
	t.Helper()
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	raw, ok := r.Body["results"].([]any)
	require.True(t, ok, "%s", r.Raw)
	out := make([]map[string]any, len(raw))
	for i, v := range raw {
		out[i] = v.(map[string]any)
	}
	return out
}

func TestBatchStart(t *testing.T) {
	t.Parallel()
	b := setup(t)

	t.Run("ItemsAnsweredInOrderAsSingleStarts", func(t *testing.T) {
		single := b.do(t, "POST", "/workflows/onboarding/start", map[string]any{"idempotency_key": "batch-earlier"})
		require.Equal(t, http.StatusCreated, single.Status)
		r := b.do(t, "POST", "/workflows/batch_start", map[string]any{"items": []any{
			map[string]any{"workflow_name": "onboarding", "idempotency_key": "batch-a", "input": map[string]any{"user_id": 1}},
			map[string]any{"workflow_name": "onboarding", "idempotency_key": "batch-earlier"},
			map[string]any{"workflow_name": "onboarding", "workflow_id": "batch-wid"},
			map[string]any{"workflow_name": "no_such_workflow"},
			map[string]any{"workflow_name": "typed", "input": map[string]any{"user_id": 0}},
			map[string]any{"workflow_name": ""},
			map[string]any{"workflow_name": "onboarding", "idempotency_key": "hv:forged"},
			map[string]any{"workflow_name": "onboarding", "nope": 1},
			"not an object",
		}})
		res := results(t, r)
		require.Len(t, res, 9)
		want := []int{201, 200, 201, 404, 422, 400, 400, 400, 400}
		for i, w := range want {
			require.EqualValues(t, w, res[i]["status"], "item %d: %v", i, res[i])
		}
		require.Equal(t, single.Body["execution_id"], res[1]["execution_id"], "a committed key replays")
		require.Equal(t, true, res[1]["deduplicated"])
		require.Equal(t, "batch-wid", res[2]["workflow_id"])
		for _, i := range []int{3, 4, 5, 6, 7, 8} {
			require.NotEmpty(t, res[i]["error"], "item %d has the JSON error body", i)
			require.NotEmpty(t, res[i]["code"], "item %d", i)
		}
		got := b.do(t, "GET", "/workflows/"+res[0]["execution_id"].(string), nil)
		require.Equal(t, http.StatusOK, got.Status, "the item's run exists")
	})

	t.Run("ResentBatchCreatesNothingNew", func(t *testing.T) {
		var items []any
		for i := range 50 {
			items = append(items, map[string]any{"workflow_name": "onboarding", "idempotency_key": fmt.Sprintf("resend-%d", i)})
		}
		first := results(t, b.do(t, "POST", "/workflows/batch_start", map[string]any{"items": items}))
		before := b.counts(t)
		again := results(t, b.do(t, "POST", "/workflows/batch_start", map[string]any{"items": items}))
		after := b.counts(t) // the first batch's runs keep appending events
		require.Equal(t, []int{before[0], before[2], before[3]}, []int{after[0], after[2], after[3]},
			"the resent batch made no run, claim or signal")
		for i := range items {
			require.EqualValues(t, 201, first[i]["status"], "%v", first[i])
			require.EqualValues(t, 200, again[i]["status"], "%v", again[i])
			require.Equal(t, first[i]["execution_id"], again[i]["execution_id"])
			require.Equal(t, true, again[i]["deduplicated"])
		}
	})

	t.Run("DuplicateKeysInsideOneBatchMakeOneRun", func(t *testing.T) {
		var items []any
		for range 20 {
			items = append(items, map[string]any{"workflow_name": "onboarding", "idempotency_key": "same-in-batch"})
		}
		res := results(t, b.do(t, "POST", "/workflows/batch_start", map[string]any{"items": items}))
		fresh := 0
		for _, r := range res {
			require.Contains(t, []any{201.0, 200.0}, r["status"], "%v", r)
			require.Equal(t, res[0]["execution_id"], r["execution_id"])
			if r["status"] == 201.0 {
				fresh++
			}
		}
		require.Equal(t, 1, fresh, "one item created the run")
	})

	t.Run("BadBatches", func(t *testing.T) {
		before := b.counts(t)
		requireError(t, b.do(t, "POST", "/workflows/batch_start", `{"items": `), http.StatusBadRequest, codeInvalidJSON)
		requireError(t, b.do(t, "POST", "/workflows/batch_start", `{"items": {}}`), http.StatusBadRequest, codeInvalidJSON)
		requireError(t, b.do(t, "POST", "/workflows/batch_start", `{"items": [], "x": 1}`), http.StatusBadRequest, codeInvalidJSON)
		requireError(t, b.do(t, "POST", "/workflows/batch_start", `{"items": []}`), http.StatusBadRequest, codeInvalidArgument)
		requireError(t, b.do(t, "POST", "/workflows/batch_start", `{}`), http.StatusBadRequest, codeInvalidArgument)
		requireError(t, b.do(t, "POST", "/workflows/batch_start", "{\"items\": [{\"workflow_name\": \"a\x00\"}]}"),
			http.StatusBadRequest, codeInvalidJSON)
		many := make([]any, maxBatchItems+1)
		for i := range many {
			many[i] = map[string]any{"workflow_name": "onboarding"}
		}
		requireError(t, b.do(t, "POST", "/workflows/batch_start", map[string]any{"items": many}), http.StatusRequestEntityTooLarge, codeTooLarge)
		huge := `{"items": [{"workflow_name": "onboarding", "input": "` + strings.Repeat("x", int(batchBodyFactor*b.server.cfg.MaxBodyBytes)) + `"}]}`
		requireError(t, b.do(t, "POST", "/workflows/batch_start", huge), http.StatusRequestEntityTooLarge, codeTooLarge)
		after := b.counts(t)
		require.Equal(t, []int{before[0], before[2]}, []int{after[0], after[2]}, "a refused batch makes no run or claim")
	})

	t.Run("AnItemOverTheSingleBodyLimitIsRefusedAlone", func(t *testing.T) {
		big := strings.Repeat("x", int(b.server.cfg.MaxBodyBytes))
		res := results(t, b.do(t, "POST", "/workflows/batch_start", map[string]any{"items": []any{
			map[string]any{"workflow_name": "onboarding", "input": big},
			map[string]any{"workflow_name": "onboarding"},
		}}))
		require.EqualValues(t, 413, res[0]["status"], "%v", res[0]["code"])
		require.EqualValues(t, 201, res[1]["status"])
	})
}

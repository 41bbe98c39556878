package api

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBatchStartAtomic(t *testing.T) {
	t.Parallel()
	b := setup(t)
	post := func(t *testing.T, items ...any) response {
		t.Helper()
		return b.do(t, "POST", "/workflows/batch_start", map[string]any{"atomic": true, "items": items})
	}
	keyed := func(prefix string, n int) []any {
		var items []any
		for i := range n {
			items = append(items, map[string]any{"workflow_name": "block", "idempotency_key": fmt.Sprintf("%s-%d", prefix, i)})
		}
		return items
	}
	// made counts runs, claims and signals (not events: earlier runs' tasks
	// may still append theirs).
	made := func(t *testing.T) [3]int {
		c := b.counts(t)
		return [3]int{c[0], c[2], c[3]}
	}
	// refused posts a batch that must fail on item with status and code
	// and leave no run, claim or signal behind.
	refused := func(t *testing.T, item, status int, code string, items ...any) {
		t.Helper()
		before := made(t)
		r := post(t, items...)
		requireError(t, r, status, code)
		require.EqualValues(t, item, r.Body["item"], "%s", r.Raw)
		require.Equal(t, before, made(t), "a refused atomic batch writes nothing")
	}

	t.Run("StartsEveryItem", func(t *testing.T) {
		items := append(keyed("all", 3), map[string]any{"workflow_name": "block", "workflow_id": "atomic-plain"},
			map[string]any{"workflow_name": "block"})
		res := results(t, post(t, items...))
		require.Len(t, res, 5)
		for i, r := range res {
			require.EqualValues(t, 201, r["status"], "item %d: %v", i, r)
			got := b.do(t, "GET", "/workflows/"+r["execution_id"].(string), nil)
			require.Equal(t, http.StatusOK, got.Status, "item %d's run exists", i)
		}
		require.Equal(t, "atomic-plain", res[3]["workflow_id"])
		require.NotEmpty(t, res[4]["workflow_id"], "a minted workflow id")
	})

	t.Run("ResentBatchCreatesNothingNew", func(t *testing.T) {
		first := results(t, post(t, keyed("resend", 10)...))
		before := made(t)
		again := results(t, post(t, keyed("resend", 10)...))
		require.Equal(t, before, made(t), "the resent batch wrote nothing")
		for i := range first {
			require.EqualValues(t, 201, first[i]["status"])
			require.EqualValues(t, 200, again[i]["status"], "%v", again[i])
			require.Equal(t, true, again[i]["deduplicated"])
			require.Equal(t, first[i]["execution_id"], again[i]["execution_id"])
		}
	})

	t.Run("AnOpenRunFailsTheWholeBatch", func(t *testing.T) {
		busy := b.do(t, "POST", "/workflows/block/start", map[string]any{"workflow_id": "atomic-busy"})
		require.Equal(t, http.StatusCreated, busy.Status, "%s", busy.Raw)
		items := append(keyed("conflict", 4), map[string]any{"workflow_name": "block", "workflow_id": "atomic-busy"})
		refused(t, 4, http.StatusConflict, codeConflict, items...)
		// The same keys without the busy item are fresh: none was kept.
		for i, r := range results(t, post(t, keyed("conflict", 4)...)) {
			require.EqualValues(t, 201, r["status"], "item %d: %v", i, r)
		}
	})

	t.Run("ABadItemFailsTheWholeBatch", func(t *testing.T) {
		good := keyed("bad", 2)
		cases := []struct {
			name   string
			item   any
			status int
			code   string
		}{
			{"UnknownWorkflow", map[string]any{"workflow_name": "no_such_workflow"}, http.StatusNotFound, codeUnknownWorkflow},
			{"BadInput", map[string]any{"workflow_name": "typed", "input": map[string]any{"user_id": 0}}, http.StatusUnprocessableEntity, "invalid_input"},
			{"EmptyName", map[string]any{"workflow_name": ""}, http.StatusBadRequest, codeInvalidArgument},
			{"SystemWorkflow", map[string]any{"workflow_name": "hv.flow.keeper", "workflow_id": "hv:flow:x"}, http.StatusBadRequest, codeInvalidArgument},
			{"ReservedKey", map[string]any{"workflow_name": "block", "idempotency_key": "hv:forged"}, http.StatusBadRequest, codeInvalidArgument},
			{"EmptyKey", map[string]any{"workflow_name": "block", "idempotency_key": ""}, http.StatusBadRequest, codeInvalidArgument},
			{"UnknownField", map[string]any{"workflow_name": "block", "nope": 1}, http.StatusBadRequest, codeInvalidJSON},
			{"NotAnObject", "not an object", http.StatusBadRequest, codeInvalidJSON},
			{"WorkflowIDTwice", map[string]any{"workflow_name": "block", "workflow_id": "twice"}, http.StatusBadRequest, codeInvalidArgument},
			{"OverTheBodyLimit", map[string]any{"workflow_name": "block", "input": strings.Repeat("x", int(b.server.cfg.MaxBodyBytes))},
				http.StatusRequestEntityTooLarge, codeTooLarge},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				items := append([]any{}, good...)
				if tc.name == "WorkflowIDTwice" {
					items = append(items, tc.item)
				}
				refused(t, len(items), tc.status, tc.code, append(items, tc.item)...)
			})
		}
	})
}

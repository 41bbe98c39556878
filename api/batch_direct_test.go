package api

import (
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// An item the direct path serves answers as the start route does: the
// same status, the same fields and, for a failure, the same code.
func TestBatchDirectAnswersAsTheRoute(t *testing.T) {
	t.Parallel()
	b := setup(t)
	busy := b.do(t, "POST", "/workflows/block/start", map[string]any{"workflow_id": "direct-busy"})
	require.Equal(t, http.StatusCreated, busy.Status, "%s", busy.Raw)
	replayed := b.do(t, "POST", "/workflows/onboarding/start", map[string]any{"idempotency_key": "direct-replay"})
	require.Equal(t, http.StatusCreated, replayed.Status, "%s", replayed.Raw)

	long := strings.Repeat("w", maxIDLen+1)
	cases := []struct {
		name           string
		workflow       string
		single, item   map[string]any
		wantStatus     int
		sameExecutions bool
	}{
		{"FreshKeyed", "onboarding", map[string]any{"idempotency_key": "direct-s1"},
			map[string]any{"idempotency_key": "direct-b1"}, 201, false},
		{"Replay", "onboarding", map[string]any{"idempotency_key": "direct-replay"},
			map[string]any{"idempotency_key": "direct-replay"}, 200, true},
		{"FreshWorkflowID", "onboarding", map[string]any{"workflow_id": "direct-s2"},
			map[string]any{"workflow_id": "direct-b2"}, 201, false},
		{"Unkeyed", "onboarding", map[string]any{}, map[string]any{}, 201, false},
		{"OpenRunHoldsTheIDAttaches", "block", map[string]any{"workflow_id": "direct-busy"},
			map[string]any{"workflow_id": "direct-busy"}, 200, true},
		{"BadInput", "typed", map[string]any{"input": map[string]any{"user_id": 0}},
			map[string]any{"input": map[string]any{"user_id": 0}}, 422, true},
		{"UnknownWorkflow", "no_such_workflow", map[string]any{}, map[string]any{}, 404, true},
		{"ReservedKey", "onboarding", map[string]any{"idempotency_key": "hv:x"},
			map[string]any{"idempotency_key": "hv:x"}, 400, true},
		{"SystemWorkflow", "hv.flow.keeper", map[string]any{"workflow_id": "hv:flow:direct"},
			map[string]any{"workflow_id": "hv:flow:direct"}, 400, true},
		{"WorkflowIDTooLong", "onboarding", map[string]any{"workflow_id": long},
			map[string]any{"workflow_id": long}, 400, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			single := b.do(t, "POST", "/workflows/"+tc.workflow+"/start", tc.single)
			require.Equal(t, tc.wantStatus, single.Status, "%s", single.Raw)
			item := maps.Clone(tc.item)
			item["workflow_name"] = tc.workflow
			got := results(t, b.do(t, "POST", "/workflows/batch_start", map[string]any{"items": []any{item}}))[0]
			require.EqualValues(t, tc.wantStatus, got["status"], "%v", got)
			delete(got, "status")
			require.Equal(t, slices.Sorted(maps.Keys(single.Body)), slices.Sorted(maps.Keys(got)), "the item's fields")
			require.Equal(t, single.Body["code"], got["code"])
			if tc.sameExecutions {
				require.Equal(t, single.Body["execution_id"], got["execution_id"])
				require.Equal(t, single.Body["existing_execution_id"], got["existing_execution_id"])
			}
		})
	}
}

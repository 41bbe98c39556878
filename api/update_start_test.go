package api

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/internal/testworkflows"
)

func TestUpdateWithStartRoute(t *testing.T) {
	t.Parallel()
	b := setup(t)
	path := "/workflows/" + testworkflows.Tally.Name() + "/update-with-start"
	add := func(wid string, n int) map[string]any {
		return map[string]any{"workflow_id": wid, "update_name": testworkflows.Add.Name(), "args": n}
	}

	t.Run("StartsOnceAndAnswersOncePerID", func(t *testing.T) {
		r := b.do(t, "POST", path, add("tally-1", 5), "Idempotency-Key", "u5")
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		require.Equal(t, "completed", r.Body["outcome"])
		require.EqualValues(t, 5, r.Body["result"])
		require.Equal(t, true, r.Body["started_fresh"])
		require.Equal(t, "tally-1", r.Body["workflow_id"])
		again := b.do(t, "POST", path, add("tally-1", 50), "Idempotency-Key", "u5")
		require.Equal(t, http.StatusOK, again.Status, "%s", again.Raw)
		require.Equal(t, r.Body["execution_id"], again.Body["execution_id"])
		require.Equal(t, r.Body["result"], again.Body["result"], "a retry gets the first answer")
		require.Equal(t, false, again.Body["started_fresh"])
		next := b.do(t, "POST", path, map[string]any{"workflow_id": "tally-1", "update_name": "add", "args": 1, "update_id": "u1"})
		require.EqualValues(t, 6, next.Body["result"], "a new id updates the running run: %s", next.Raw)
		require.Equal(t, r.Body["execution_id"], next.Body["execution_id"])
	})
	t.Run("BadInput", func(t *testing.T) {
		for _, c := range []struct {
			name, path string
			body       any
			status     int
			code       string
		}{
			{"NoWorkflowID", path, map[string]any{"update_name": "add", "args": 1}, http.StatusBadRequest, codeInvalidArgument},
			{"NoUpdateName", path, map[string]any{"workflow_id": "bad-1", "args": 1}, http.StatusBadRequest, codeInvalidArgument},
			{"ReservedUpdateName", path, map[string]any{"workflow_id": "bad-1", "update_name": "hv:update"}, http.StatusBadRequest, codeInvalidArgument},
			{"ReservedID", path, map[string]any{"workflow_id": "bad-1", "update_name": "add", "update_id": "hv:x"}, http.StatusBadRequest, codeInvalidArgument},
			{"BadReusePolicy", path, map[string]any{"workflow_id": "bad-1", "update_name": "add", "id_reuse_policy": "maybe"}, http.StatusBadRequest, codeInvalidArgument},
			{"BadPriority", path, map[string]any{"workflow_id": "bad-1", "update_name": "add", "priority": 9}, http.StatusBadRequest, codeInvalidArgument},
			{"UnknownField", path, map[string]any{"workflow_id": "bad-1", "update_name": "add", "delay": "1s"}, http.StatusBadRequest, codeInvalidJSON},
			{"NotAnObject", path, "[1]", http.StatusBadRequest, codeInvalidJSON},
			{"UnknownWorkflow", "/workflows/nope/update-with-start", map[string]any{"workflow_id": "bad-1", "update_name": "add"}, http.StatusNotFound, codeUnknownWorkflow},
			{"SystemWorkflow", "/workflows/hv.flow.keeper/update-with-start", map[string]any{"workflow_id": "bad-1", "update_name": "add"}, http.StatusBadRequest, codeInvalidArgument},
		} {
			t.Run(c.name, func(t *testing.T) {
				before := b.counts(t)
				requireError(t, b.do(t, "POST", c.path, c.body), c.status, c.code)
				require.Equal(t, before, b.counts(t), "nothing recorded")
			})
		}
	})
	t.Run("ARejectedUpdateLeavesTheRunStarted", func(t *testing.T) {
		requireError(t, b.do(t, "POST", path, add("tally-2", -1)), http.StatusUnprocessableEntity, codeUpdateRejected)
		r := b.do(t, "POST", path, add("tally-2", 2))
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		require.Equal(t, false, r.Body["started_fresh"], "the refused update's start stands")
	})
}

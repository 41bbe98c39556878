package api

import (
	"net/http"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/internal/testworkflows"
)

func TestResetRoute(t *testing.T) {
	t.Parallel()
	b := setup(t)
	startTally := func(t *testing.T, wid string) string {
		r := b.do(t, "POST", "/workflows/"+testworkflows.Tally.Name()+"/start", map[string]any{"workflow_id": wid})
		require.Less(t, r.Status, 300, "%s", r.Raw)
		return r.Body["execution_id"].(string)
	}
	ping := func(t *testing.T, id, v string) {
		r := b.do(t, "POST", "/workflows/"+id+"/signal/"+testworkflows.Ping.Name(), `"`+v+`"`, "Idempotency-Key", "ping-"+v)
		require.Less(t, r.Status, 300, "%s", r.Raw)
	}

	t.Run("ReplacesTheRunOncePerKey", func(t *testing.T) {
		id := startTally(t, "tally-reset-1")
		ping(t, id, "a")
		r := b.do(t, "POST", "/workflows/"+id+"/reset", map[string]any{"point": "first", "reason": "new code"}, "Idempotency-Key", "r1")
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		require.Equal(t, true, r.Body["newly_reset"], "%s", r.Raw)
		require.Equal(t, true, r.Body["terminated"], "%s", r.Raw)
		require.Equal(t, id, r.Body["replaced_execution_id"])
		require.Equal(t, id, r.Body["reset_from"])
		require.EqualValues(t, 0, r.Body["event_id"])
		again := b.do(t, "POST", "/workflows/"+id+"/reset", map[string]any{"point": "last_task", "idempotency_key": "r1"})
		require.Equal(t, http.StatusOK, again.Status, "%s", again.Raw)
		require.Equal(t, r.Body["execution_id"], again.Body["execution_id"], "a retry answers the first reset")
		require.Equal(t, false, again.Body["newly_reset"])
		require.Equal(t, true, again.Body["terminated"], "the retry says what the reset did")
		old := b.do(t, "GET", "/workflows/"+id, nil)
		require.Equal(t, "TERMINATED", old.Body["execution"].(map[string]any)["state"], "%s", old.Raw)
		ping(t, id, "stop") // the replaced run's id reaches the new run
		res := b.do(t, "GET", "/workflows/"+r.Body["execution_id"].(string)+"/result?wait=20s", nil)
		require.Equal(t, "COMPLETED", res.Body["state"], "%s", res.Raw)
	})

	t.Run("BadInput", func(t *testing.T) {
		id := startTally(t, "tally-reset-2")
		path := "/workflows/" + id + "/reset"
		for _, c := range []struct {
			name, path string
			body       any
			header     []string
			status     int
			code       string
		}{
			{"NoPoint", path, map[string]any{"reason": "x"}, nil, http.StatusBadRequest, codeInvalidArgument},
			{"BothPoints", path, map[string]any{"point": "first", "event_id": 0}, nil, http.StatusBadRequest, codeInvalidArgument},
			{"NegativeEvent", path, map[string]any{"event_id": -1}, nil, http.StatusBadRequest, codeInvalidArgument},
			{"UnknownPoint", path, map[string]any{"point": "middle"}, nil, http.StatusBadRequest, codeInvalidArgument},
			{"NotAPoint", path, map[string]any{"event_id": 999}, nil, http.StatusBadRequest, codeInvalidArgument},
			{"EventIDAString", path, map[string]any{"event_id": "3"}, nil, http.StatusBadRequest, codeInvalidJSON},
			{"HugeEventID", path, `{"event_id": 1e30}`, nil, http.StatusBadRequest, codeInvalidJSON},
			{"UnknownField", path, map[string]any{"point": "first", "to": 3}, nil, http.StatusBadRequest, codeInvalidJSON},
			{"NotAnObject", path, "[1]", nil, http.StatusBadRequest, codeInvalidJSON},
			{"ReservedKey", path, map[string]any{"point": "first", "idempotency_key": "hv:x"}, nil, http.StatusBadRequest, codeInvalidArgument},
			{"EmptyHeaderKey", path, map[string]any{"point": "first"}, []string{"Idempotency-Key", " "}, http.StatusBadRequest, codeInvalidArgument},
			{"NULInReason", path, map[string]any{"point": "first", "reason": "a\x00b"}, nil, http.StatusBadRequest, codeInvalidJSON},
			{"NotAUUID", "/workflows/nope/reset", map[string]any{"point": "first"}, nil, http.StatusBadRequest, codeInvalidArgument},
			{"UnknownRun", "/workflows/" + uuid.NewString() + "/reset", map[string]any{"point": "first"}, nil, http.StatusNotFound, codeNotFound},
		} {
			t.Run(c.name, func(t *testing.T) {
				before := b.counts(t)
				requireError(t, b.do(t, "POST", c.path, c.body, c.header...), c.status, c.code)
				require.Equal(t, before, b.counts(t), "nothing recorded")
			})
		}
	})
}

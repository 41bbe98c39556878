package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/internal/testworkflows"
)

func TestUpdateRoute(t *testing.T) {
	t.Parallel()
	b := setup(t)
	run := b.do(t, "POST", "/workflows/"+testworkflows.Tally.Name()+"/start", map[string]any{})
	require.Equal(t, http.StatusCreated, run.Status, "%s", run.Raw)
	id := run.Body["execution_id"].(string)
	path := "/workflows/" + id + "/update/" + testworkflows.Add.Name()

	t.Run("AnsweredOncePerID", func(t *testing.T) {
		r := b.do(t, "POST", path, map[string]any{"args": 5}, "Idempotency-Key", "add-5")
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		require.Equal(t, "completed", r.Body["outcome"])
		require.EqualValues(t, 5, r.Body["result"])
		require.Equal(t, "add-5", r.Body["update_id"])
		again := b.do(t, "POST", path, map[string]any{"args": 100, "update_id": "ignored"}, "Idempotency-Key", "add-5")
		require.Equal(t, r.Body, again.Body, "the header's id wins, and its first answer is kept")
		body := b.do(t, "POST", path, map[string]any{"args": 1, "update_id": "add-1"})
		require.EqualValues(t, 6, body.Body["result"], "%s", body.Raw)
	})
	t.Run("NotAnsweredInTimeIsAccepted", func(t *testing.T) {
		hold := "/workflows/" + id + "/update/" + testworkflows.Hold.Name()
		r := b.do(t, "POST", hold+"?wait=50ms", map[string]any{}, "Idempotency-Key", "held")
		require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Raw)
		require.Equal(t, map[string]any{"update_id": "held", "update": "hold", "execution_id": id, "outcome": "accepted"}, r.Body)
		rel := b.do(t, "POST", "/workflows/"+id+"/signal/"+testworkflows.Release.Name(), `"go"`)
		require.Equal(t, http.StatusAccepted, rel.Status, "%s", rel.Raw)
		r = b.do(t, "POST", hold+"?wait=20s", map[string]any{}, "Idempotency-Key", "held")
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		require.Equal(t, "go", r.Body["result"])
	})
	t.Run("AHandlerErrorIsTheAnswer", func(t *testing.T) {
		r := b.do(t, "POST", path, map[string]any{"args": 13})
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		require.Equal(t, "failed", r.Body["outcome"])
		require.Contains(t, r.Body["error"].(map[string]any)["message"], "unlucky")
		require.NotEmpty(t, r.Body["update_id"], "an update sent without an id gets one")
	})
	t.Run("BadInput", func(t *testing.T) {
		for _, c := range []struct {
			name, path string
			body       any
			headers    []string
			status     int
			code       string
		}{
			{"Rejected", path, map[string]any{"args": -1}, nil, http.StatusUnprocessableEntity, codeUpdateRejected},
			{"UnknownUpdate", "/workflows/" + id + "/update/nope", map[string]any{"args": 1}, nil, http.StatusNotFound, codeUnknownUpdate},
			{"ArgsOfTheWrongType", path, map[string]any{"args": "one"}, nil, http.StatusUnprocessableEntity, codeInvalidPayload},
			{"ReservedName", "/workflows/" + id + "/update/hv:x", map[string]any{}, nil, http.StatusBadRequest, codeInvalidArgument},
			{"ReservedID", path, map[string]any{"args": 1, "update_id": "hv:x"}, nil, http.StatusBadRequest, codeInvalidArgument},
			{"EmptyID", path, map[string]any{"args": 1, "update_id": ""}, nil, http.StatusBadRequest, codeInvalidArgument},
			{"EmptyHeader", path, map[string]any{"args": 1}, []string{"Idempotency-Key", " "}, http.StatusBadRequest, codeInvalidArgument},
			{"UnknownField", path, map[string]any{"argz": 1}, nil, http.StatusBadRequest, codeInvalidJSON},
			{"NotAnObject", path, "[1]", nil, http.StatusBadRequest, codeInvalidJSON},
			{"BadWait", path + "?wait=soon", map[string]any{"args": 1}, nil, http.StatusBadRequest, codeInvalidArgument},
			{"LongID", path, map[string]any{"args": 1, "update_id": strings.Repeat("k", maxKeyLen+1)}, nil, http.StatusBadRequest, codeInvalidArgument},
			{"NotAnExecution", "/workflows/nope/update/add", map[string]any{"args": 1}, nil, http.StatusBadRequest, codeInvalidArgument},
		} {
			t.Run(c.name, func(t *testing.T) {
				before := b.counts(t)
				r := b.do(t, "POST", c.path, c.body, c.headers...)
				requireError(t, r, c.status, c.code)
				require.Equal(t, before, b.counts(t), "nothing recorded")
			})
		}
	})
	t.Run("AClosedRunAnswersItsIDsOnly", func(t *testing.T) {
		r := b.do(t, "POST", "/workflows/"+id+"/signal/"+testworkflows.Ping.Name(), `"stop"`)
		require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Raw)
		res := b.do(t, "GET", "/workflows/"+id+"/result?wait=20s", nil)
		require.Equal(t, "COMPLETED", res.Body["state"], "%s", res.Raw)
		again := b.do(t, "POST", path, map[string]any{"args": 5}, "Idempotency-Key", "add-5")
		require.EqualValues(t, 5, again.Body["result"], "%s", again.Raw)
		requireError(t, b.do(t, "POST", path, map[string]any{"args": 5}, "Idempotency-Key", "late"), http.StatusConflict, codeTerminal)
	})
}

package api

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/internal/testworkflows"
)

// startTallies starts n Tally runs and returns their ids.
func startTallies(t *testing.T, b *testBundle, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		r := b.do(t, "POST", "/workflows/"+testworkflows.Tally.Name()+"/start", map[string]any{})
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
		ids[i] = r.Body["execution_id"].(string)
	}
	return ids
}

// batchDone polls GET /batch/{id} until the job is no longer running.
func batchDone(t *testing.T, b *testBundle, id string) response {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := b.do(t, "GET", "/batch/"+id, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		if r.Body["state"] != "running" {
			return r
		}
		if !time.Now().Before(deadline) {
			d := b.do(t, "GET", "/workflows/"+r.Body["execution_id"].(string), nil)
			t.Fatalf("the job still runs: %s\n%s", r.Raw, d.Raw)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestBatchRoutes(t *testing.T) {
	t.Parallel()

	t.Run("TerminatesTheMatchingRunsOnce", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ids := startTallies(t, b, 5)
		body := map[string]any{"operation": "terminate", "reason": "cleanup", "rate": 500,
			"filter": map[string]any{"workflow_name": testworkflows.Tally.Name(), "states": []string{"running"}}}
		r := b.do(t, "POST", "/batch", body, "Idempotency-Key", "term-1")
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
		id := r.Body["batch_id"].(string)
		again := b.do(t, "POST", "/batch", body, "Idempotency-Key", "term-1")
		require.Equal(t, http.StatusOK, again.Status, "%s", again.Raw)
		require.Equal(t, id, again.Body["batch_id"], "a retried creation finds the job")
		done := batchDone(t, b, id)
		require.Equal(t, "completed", done.Body["state"])
		require.Equal(t, map[string]any{"matched": 5.0, "done": 5.0, "skipped": 0.0, "failed": 0.0, "pages": 1.0, "finished": true},
			done.Body["progress"], "%s", done.Raw)
		require.Equal(t, "terminate", done.Body["operation"])
		for _, x := range ids {
			d := b.do(t, "GET", "/workflows/"+x, nil)
			require.Equal(t, "TERMINATED", d.Body["execution"].(map[string]any)["state"], "%s", d.Raw)
		}
	})

	t.Run("SignalsTheMatchingRuns", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ids := startTallies(t, b, 3)
		r := b.do(t, "POST", "/batch", map[string]any{"operation": "signal", "signal_name": testworkflows.Ping.Name(),
			"signal_payload": "stop", "filter": map[string]any{"workflow_name": testworkflows.Tally.Name()}})
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
		done := batchDone(t, b, r.Body["batch_id"].(string))
		require.Equal(t, 3.0, done.Body["progress"].(map[string]any)["done"], "%s", done.Raw)
		for _, x := range ids {
			res := b.do(t, "GET", "/workflows/"+x+"/result?wait=20s", nil)
			require.Equal(t, "COMPLETED", res.Body["state"], "%s", res.Raw)
		}
	})

	t.Run("ResetsTheMatchingRunsOnce", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ids := startTallies(t, b, 3)
		later := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
		r := b.do(t, "POST", "/batch", map[string]any{"operation": "reset", "reset_point": "first", "reason": "new code",
			"filter": map[string]any{"workflow_name": testworkflows.Tally.Name(), "started_before": later}})
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
		done := batchDone(t, b, r.Body["batch_id"].(string))
		require.Equal(t, "reset", done.Body["operation"])
		require.Equal(t, "first", done.Body["reset_point"])
		require.Equal(t, 3.0, done.Body["progress"].(map[string]any)["done"], "the new runs are not the job's: %s", done.Raw)
		for _, x := range ids {
			d := b.do(t, "GET", "/workflows/"+x, nil)
			ex := d.Body["execution"].(map[string]any)
			require.Equal(t, "TERMINATED", ex["state"], "%s", d.Raw)
			require.NotEmpty(t, ex["continued_to"], "replaced by its reset")
		}
	})

	t.Run("FiltersByWorkflowIDPrefix", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ids := map[string]string{}
		for _, wid := range []string{"doomed-1", "doomed-2", "kept-1"} {
			r := b.do(t, "POST", "/workflows/"+testworkflows.Tally.Name()+"/start", map[string]any{"workflow_id": wid})
			require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
			ids[wid] = r.Body["execution_id"].(string)
		}
		list := b.do(t, "GET", "/workflows?workflow_id_prefix=doomed-&counts=true", nil)
		require.Len(t, list.Body["workflows"], 2, "%s", list.Raw)
		require.Equal(t, 2.0, list.Body["counts"].(map[string]any)["RUNNING"])
		r := b.do(t, "POST", "/batch", map[string]any{"operation": "terminate",
			"filter": map[string]any{"workflow_name": testworkflows.Tally.Name(), "workflow_id_prefix": "doomed-"}})
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
		done := batchDone(t, b, r.Body["batch_id"].(string))
		require.Equal(t, 2.0, done.Body["progress"].(map[string]any)["done"], "%s", done.Raw)
		kept := b.do(t, "GET", "/workflows/"+ids["kept-1"], nil)
		require.Equal(t, "RUNNING", kept.Body["execution"].(map[string]any)["state"], "%s", kept.Raw)
	})

	t.Run("ACancelledJobStopsAfterItsPage", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		startTallies(t, b, 4)
		r := b.do(t, "POST", "/batch", map[string]any{"operation": "terminate", "rate": 0.5,
			"filter": map[string]any{"workflow_name": testworkflows.Tally.Name()}})
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
		id := r.Body["batch_id"].(string)
		stop := b.do(t, "POST", "/batch/"+id+"/cancel", nil)
		require.Equal(t, http.StatusAccepted, stop.Status, "%s", stop.Raw)
		done := batchDone(t, b, id)
		require.Equal(t, "stopped", done.Body["state"], "%s", done.Raw)
		require.Less(t, done.Body["progress"].(map[string]any)["done"], 4.0, "one run a page, two seconds apart: stopped before the last")
		again := b.do(t, "POST", "/batch/"+id+"/cancel", nil)
		require.Equal(t, http.StatusAccepted, again.Status, "a stopped job's cancel is answered: %s", again.Raw)
	})

	t.Run("BadInput", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		run := startTallies(t, b, 1)[0]
		filter := map[string]any{"workflow_name": testworkflows.Tally.Name()}
		for _, c := range []struct {
			name, method, path string
			body               any
			status             int
			code               string
		}{
			{"UnknownOperation", "POST", "/batch", map[string]any{"operation": "explode", "filter": filter}, http.StatusBadRequest, codeInvalidArgument},
			{"ResetWithoutPoint", "POST", "/batch", map[string]any{"operation": "reset", "filter": filter}, http.StatusBadRequest, codeInvalidArgument},
			{"ResetToAnEventID", "POST", "/batch", map[string]any{"operation": "reset", "reset_point": "3", "filter": filter}, http.StatusBadRequest, codeInvalidArgument},
			{"PointWithoutReset", "POST", "/batch", map[string]any{"operation": "terminate", "reset_point": "first", "filter": filter}, http.StatusBadRequest, codeInvalidArgument},
			{"NoWorkflowName", "POST", "/batch", map[string]any{"operation": "terminate", "filter": map[string]any{}}, http.StatusBadRequest, codeInvalidArgument},
			{"SystemWorkflow", "POST", "/batch", map[string]any{"operation": "terminate", "filter": map[string]any{"workflow_name": "hv.batch"}}, http.StatusBadRequest, codeInvalidArgument},
			{"UnknownState", "POST", "/batch", map[string]any{"operation": "terminate", "filter": map[string]any{"workflow_name": "x", "states": []string{"sleepy"}}}, http.StatusBadRequest, codeInvalidArgument},
			{"ZeroRate", "POST", "/batch", map[string]any{"operation": "terminate", "filter": filter, "rate": 0}, http.StatusBadRequest, codeInvalidArgument},
			{"HugeRate", "POST", "/batch", map[string]any{"operation": "terminate", "filter": filter, "rate": 1e308}, http.StatusBadRequest, codeInvalidArgument},
			{"RateNotANumber", "POST", "/batch", map[string]any{"operation": "terminate", "filter": filter, "rate": "fast"}, http.StatusBadRequest, codeInvalidJSON},
			{"SignalWithoutName", "POST", "/batch", map[string]any{"operation": "signal", "filter": filter}, http.StatusBadRequest, codeInvalidArgument},
			{"ReservedSignal", "POST", "/batch", map[string]any{"operation": "signal", "signal_name": "hv:x", "filter": filter}, http.StatusBadRequest, codeInvalidArgument},
			{"SignalNameOnTerminate", "POST", "/batch", map[string]any{"operation": "terminate", "signal_name": "ping", "filter": filter}, http.StatusBadRequest, codeInvalidArgument},
			{"ReservedKey", "POST", "/batch", map[string]any{"operation": "terminate", "filter": filter, "idempotency_key": "hv:k"}, http.StatusBadRequest, codeInvalidArgument},
			{"BadTime", "POST", "/batch", map[string]any{"operation": "terminate", "filter": map[string]any{"workflow_name": "x", "started_after": "yesterday"}}, http.StatusBadRequest, codeInvalidJSON},
			{"UnknownField", "POST", "/batch", map[string]any{"operation": "terminate", "filter": filter, "speed": 1}, http.StatusBadRequest, codeInvalidJSON},
			{"NotAnObject", "POST", "/batch", "[1]", http.StatusBadRequest, codeInvalidJSON},
			{"LongReason", "POST", "/batch", map[string]any{"operation": "terminate", "filter": filter, "reason": strings.Repeat("r", maxIDLen+1)}, http.StatusBadRequest, codeInvalidArgument},
			{"NotAJob", "GET", "/batch/" + run, nil, http.StatusNotFound, codeNotFound},
			{"NotAnID", "GET", "/batch/nope", nil, http.StatusBadRequest, codeInvalidArgument},
			{"CancelNotAJob", "POST", "/batch/" + run + "/cancel", nil, http.StatusNotFound, codeNotFound},
		} {
			t.Run(c.name, func(t *testing.T) {
				before := b.counts(t)
				requireError(t, b.do(t, c.method, c.path, c.body), c.status, c.code)
				require.Equal(t, before, b.counts(t), "nothing recorded")
			})
		}
	})
}

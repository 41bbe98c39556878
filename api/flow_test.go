package api

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/demo"
)

func TestStartFlowControl(t *testing.T) {
	t.Parallel()
	b := setup(t)
	report := "/workflows/" + demo.ReportName + "/start"

	t.Run("OverTheLimitIsQueuedAndVisible", func(t *testing.T) {
		var ids []string
		for i := range demo.ReportMaxRunning + 1 {
			r := b.do(t, "POST", report, map[string]any{"input": map[string]any{"customer": "c1", "sleep_ms": 3_600_000},
				"priority": 2, "fairness_key": "tenant-a"})
			require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
			want := map[bool]string{true: "RUNNING", false: "QUEUED"}[i < demo.ReportMaxRunning] // free slots first
			require.Equal(t, want, r.Body["state"], "%s", r.Raw)
			ids = append(ids, r.Body["execution_id"].(string))
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			list := b.do(t, "GET", "/workflows?workflow_name=report&state=QUEUED", nil)
			require.Equal(t, http.StatusOK, list.Status, "%s", list.Raw)
			if n := len(list.Body["workflows"].([]any)); n == 1 {
				break
			}
			require.True(t, time.Now().Before(deadline), "never one run queued: %s", list.Raw)
			time.Sleep(20 * time.Millisecond)
		}
		states := map[string]int{}
		for _, id := range ids {
			d := b.do(t, "GET", "/workflows/"+id, nil)
			states[d.Body["execution"].(map[string]any)["state"].(string)]++
		}
		require.Equal(t, map[string]int{"RUNNING": demo.ReportMaxRunning, "QUEUED": 1}, states)
	})

	t.Run("FlowShowsLimitsAndKeys", func(t *testing.T) {
		r := b.do(t, "GET", "/flow", nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		require.Contains(t, r.Body["limits"], map[string]any{"workflow_name": demo.ReportName,
			"max_running": float64(demo.ReportMaxRunning), "key_pointer": "/customer"})
		require.Equal(t, []any{map[string]any{"shard": float64(0), // SingleShard routes every shard id to its one engine as shard 0
			"workflow_name": demo.ReportName, "key": "c1",
			"running": float64(demo.ReportMaxRunning), "queued": float64(1)}}, r.Body["keys"])
		require.Equal(t, []any{map[string]any{"activity_name": demo.RenderReportName, "max_running": float64(1), "key_pointer": "/customer"}},
			r.Body["activity_limits"])
		require.Equal(t, []any{}, r.Body["activities"], "no report has come to render yet")
		requireError(t, b.do(t, "GET", "/flow?shard=9", nil), http.StatusBadRequest, codeInvalidArgument)
	})

	t.Run("BadFlowFieldsAre400", func(t *testing.T) {
		in := map[string]any{"customer": "c2"}
		for name, c := range map[string]struct {
			body any
			code string
		}{
			"PriorityZero":       {map[string]any{"input": in, "priority": 0}, codeInvalidArgument},
			"PriorityTooHigh":    {map[string]any{"input": in, "priority": 6}, codeInvalidArgument},
			"PriorityNotANumber": {map[string]any{"input": in, "priority": "high"}, codeInvalidJSON},
			"PriorityFraction":   {`{"input": {"customer": "c2"}, "priority": 1.5}`, codeInvalidJSON},
			"PriorityHuge":       {`{"input": {"customer": "c2"}, "priority": 1e30}`, codeInvalidJSON},
			"ConcurrencyKeyNUL":  {map[string]any{"input": in, "concurrency_key": "a\x00b"}, codeInvalidJSON},
			"ConcurrencyKeyCtrl": {map[string]any{"input": in, "concurrency_key": "a\x01b"}, codeInvalidArgument},
			"FairnessKeyLong":    {map[string]any{"input": in, "fairness_key": strings.Repeat("k", 257)}, codeInvalidArgument},
			"WeightZero":         {map[string]any{"input": in, "fairness_weight": 0}, codeInvalidArgument},
			"WeightTooHigh":      {map[string]any{"input": in, "fairness_weight": 1001}, codeInvalidArgument},
			"WeightNotANumber":   {map[string]any{"input": in, "fairness_weight": "heavy"}, codeInvalidJSON},
			"WeightHuge":         {`{"input": {"customer": "c2"}, "fairness_weight": 1e30}`, codeInvalidJSON},
			"KeyMissing":         {map[string]any{"input": map[string]any{"sleep_ms": 1}}, codeInvalidArgument},
			"KeyNotAScalar":      {map[string]any{"input": map[string]any{"customer": []int{1}}}, codeInvalidArgument},
		} {
			t.Run(name, func(t *testing.T) {
				before := b.counts(t)
				requireError(t, b.do(t, "POST", report, c.body), http.StatusBadRequest, c.code)
				require.Equal(t, before, b.counts(t), "a rejected start changed data")
			})
		}
	})

	t.Run("SignalWithStartCarriesTheFlowFields", func(t *testing.T) {
		sws := "/workflows/" + demo.ReportName + "/signal-with-start"
		r := b.do(t, "POST", sws, map[string]any{"workflow_id": "sws-flow", "signal_name": "nudge", "concurrency_key": "sws-key",
			"priority": 1, "fairness_key": "tenant-s", "fairness_weight": 2, "input": map[string]any{"customer": "c3", "sleep_ms": 3_600_000}})
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
		f := b.do(t, "GET", "/flow", nil)
		var keys []string
		for _, k := range f.Body["keys"].([]any) {
			keys = append(keys, k.(map[string]any)["key"].(string))
		}
		require.Contains(t, keys, "sws-key", "the caller's key wins over the input's: %s", f.Raw)
		requireError(t, b.do(t, "POST", sws, map[string]any{"workflow_id": "sws-flow-2", "signal_name": "nudge", "priority": 9,
			"input": map[string]any{"customer": "c3"}}), http.StatusBadRequest, codeInvalidArgument)
	})
}

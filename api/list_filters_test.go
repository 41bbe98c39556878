package api

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/engine"
)

// TestListStartedAndCounts lists runs by their started range and counts
// them by state through GET /workflows.
func TestListStartedAndCounts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var created []string
	for i, name := range []string{"typed", "block", "block"} {
		r := b.do(t, "POST", "/workflows/"+name+"/start", map[string]any{"workflow_id": "lf-" + string(rune('a'+i)), "input": map[string]any{"user_id": 1}})
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
		if name == "typed" {
			res := b.do(t, "GET", "/workflows/"+r.Body["execution_id"].(string)+"/result?wait=20s", nil)
			require.Equal(t, "COMPLETED", res.Body["state"], "%s", res.Raw)
		}
	}
	all := b.do(t, "GET", "/workflows?order=asc", nil)
	for _, x := range all.Body["workflows"].([]any) {
		created = append(created, x.(map[string]any)["created_at"].(string))
	}
	require.Len(t, created, 3)
	ids := func(r response) []string {
		var out []string
		for _, x := range r.Body["workflows"].([]any) {
			out = append(out, x.(map[string]any)["workflow_id"].(string))
		}
		return out
	}
	list := func(t *testing.T, q url.Values) response {
		r := b.do(t, "GET", "/workflows?"+q.Encode(), nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		return r
	}

	t.Run("StartedRange", func(t *testing.T) {
		r := list(t, url.Values{"order": {"asc"}, "started_after": {created[1]}})
		require.Equal(t, []string{"lf-b", "lf-c"}, ids(r))
		r = list(t, url.Values{"order": {"asc"}, "started_before": {created[1]}})
		require.Equal(t, []string{"lf-a"}, ids(r))
	})
	t.Run("CursorStaysInsideTheRange", func(t *testing.T) {
		q := url.Values{"page_size": {"1"}, "started_after": {created[1]}}
		first := list(t, q)
		require.Equal(t, []string{"lf-c"}, ids(first))
		q.Set("cursor", first.Body["next_cursor"].(string))
		second := list(t, q)
		require.Equal(t, []string{"lf-b"}, ids(second))
		require.Nil(t, second.Body["next_cursor"], "lf-a is before the range")
	})
	t.Run("Counts", func(t *testing.T) {
		r := list(t, url.Values{"counts": {"true"}, "state": {"completed"}})
		require.Equal(t, []string{"lf-a"}, ids(r))
		counts := r.Body["counts"].(map[string]any)
		require.Equal(t, float64(2), counts["RUNNING"])
		require.Equal(t, float64(1), counts["COMPLETED"])
		require.Equal(t, float64(0), counts["TERMINATED"])
		r = list(t, url.Values{"counts": {"true"}, "started_after": {created[2]}})
		require.Equal(t, float64(1), r.Body["counts"].(map[string]any)["RUNNING"])
		require.Equal(t, float64(0), r.Body["counts"].(map[string]any)["COMPLETED"])
		require.NotContains(t, list(t, url.Values{}).Body, "counts", "counts only when asked")
	})
	for _, tc := range []struct{ name, query, want string }{
		{"AfterNotATime", "started_after=yesterday", "started_after"},
		{"BeforeNoZone", "started_before=2026-01-02T15:04:05", "started_before"},
		{"BeforeDateOnly", "started_before=2026-01-02", "started_before"},
		{"AfterHugeYear", "started_after=999999999-01-02T15:04:05Z", "started_after"},
		{"AfterNUL", "started_after=%00", "started_after"},
		{"BeforeInvalidUTF8", "started_before=%ff", "started_before"},
		{"EmptyRange", "started_after=2026-01-02T15:04:05Z&started_before=2026-01-02T15:04:05Z", "started_after"},
		{"InvertedRange", "started_after=2026-01-03T00:00:00Z&started_before=2026-01-02T00:00:00%2B01:00", "started_after"},
		{"CountsNotABool", "counts=yes", "counts"},
	} {
		t.Run("Bad"+tc.name, func(t *testing.T) {
			r := b.do(t, "GET", "/workflows?"+tc.query, nil)
			requireError(t, r, http.StatusBadRequest, codeInvalidArgument)
			require.Contains(t, r.Body["error"], tc.want)
		})
	}
}

func TestSumCounts(t *testing.T) {
	pages := []engine.ListPage{{Counts: map[string]int64{"RUNNING": 2, "FAILED": 1}}, {Counts: map[string]int64{"RUNNING": 7}},
		{Counts: map[string]int64{"RUNNING": 3, "COMPLETED": 4}}}
	for _, tc := range []struct {
		name string
		errs []error
		want map[string]int64
	}{
		{"AllShards", []error{nil, nil, nil}, map[string]int64{"RUNNING": 12, "FAILED": 1, "COMPLETED": 4}},
		{"AnUnreadShardIsLeftOut", []error{nil, errShardDown, nil}, map[string]int64{"RUNNING": 5, "FAILED": 1, "COMPLETED": 4}},
		{"NoShard", []error{errShardDown, errShardDown, errShardDown}, map[string]int64{}},
	} {
		t.Run(tc.name, func(t *testing.T) { require.Equal(t, tc.want, sumCounts(pages, tc.errs)) })
	}
}

var errShardDown = &apiError{status: http.StatusServiceUnavailable, code: codeUnavailable, msg: "down"}

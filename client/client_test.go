package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/client"
)

// seen is one request as the fake server received it.
type seen struct {
	method  string
	path    string // escaped path
	query   map[string][]string
	header  http.Header
	body    []byte
	hasBody bool
}

// fakeBundle is a fake node answering every request with one canned reply.
type fakeBundle struct {
	srv  *httptest.Server
	reqs chan seen
}

// next returns the request the fake received last.
func (b *fakeBundle) next(t *testing.T) seen {
	t.Helper()
	select {
	case r := <-b.reqs:
		return r
	default:
		t.Fatal("the fake server received no request")
		return seen{}
	}
}

// fake starts a server that records each request and answers status with
// body (no body when empty).
func fake(t *testing.T, status int, body string, opts ...client.Option) (*client.Client, *fakeBundle) {
	t.Helper()
	b := &fakeBundle{reqs: make(chan seen, 16)}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		b.reqs <- seen{method: r.Method, path: r.URL.EscapedPath(), query: r.URL.Query(), header: r.Header.Clone(),
			body: raw, hasBody: r.ContentLength > 0}
		if body != "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(b.srv.Close)
	return client.New(b.srv.URL, opts...), b
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// bodyMap decodes a request body to a map.
func bodyMap(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m), "body %s", raw)
	return m
}

func TestStartRequestShape(t *testing.T) {
	t.Parallel()

	t.Run("KeyGoesInHeaderNotBody", func(t *testing.T) {
		t.Parallel()
		c, b := fake(t, http.StatusCreated, `{"execution_id":"e1","started_fresh":true,"deduplicated":false}`,
			client.WithToken("s3cret"), client.WithUserAgent("ua/1"))
		_, err := c.Start(ctxT(t), "order", client.StartRequest{
			WorkflowID: "wf-1", Input: json.RawMessage(`{"sleep_ms":10}`), Queue: "q", Memo: map[string]int{"n": 1},
			IdempotencyKey: "evt-1", ReusePolicy: client.ReuseRejectDuplicate, ConflictPolicy: client.ConflictUseExisting,
		})
		require.NoError(t, err)
		r := b.next(t)
		require.Equal(t, http.MethodPost, r.method)
		require.Equal(t, "/api/harvest/workflows/order/start", r.path)
		require.Equal(t, "evt-1", r.header.Get("Idempotency-Key"))
		require.Equal(t, "Bearer s3cret", r.header.Get("Authorization"))
		require.Equal(t, "ua/1", r.header.Get("User-Agent"))
		require.Equal(t, "application/json", r.header.Get("Content-Type"))
		require.Empty(t, r.query, "the key is not sent as a query parameter either")
		require.Equal(t, map[string]any{
			"workflow_id": "wf-1", "input": map[string]any{"sleep_ms": float64(10)}, "queue": "q",
			"memo": map[string]any{"n": float64(1)}, "reuse_policy": "reject_duplicate", "conflict_policy": "use_existing",
		}, bodyMap(t, r.body))
	})

	t.Run("NoKeyNoHeaderAndMinimalBody", func(t *testing.T) {
		t.Parallel()
		c, b := fake(t, http.StatusCreated, `{"execution_id":"e1"}`)
		_, err := c.Start(ctxT(t), "order", client.StartRequest{})
		require.NoError(t, err)
		r := b.next(t)
		_, hasKey := r.header["Idempotency-Key"]
		require.False(t, hasKey, "no Idempotency-Key header without a key")
		require.Empty(t, r.header.Get("Authorization"))
		require.Equal(t, client.UserAgentDefault, r.header.Get("User-Agent"))
		require.JSONEq(t, `{}`, string(r.body))
	})

	t.Run("WaitGoesInTheQuery", func(t *testing.T) {
		t.Parallel()
		c, b := fake(t, http.StatusCreated, `{"execution_id":"e1","result":{"execution_id":"e1","state":"COMPLETED","output":7}}`)
		res, err := c.Start(ctxT(t), "order", client.StartRequest{Wait: 1500 * time.Millisecond})
		require.NoError(t, err)
		require.Equal(t, []string{"1.5s"}, b.next(t).query["wait"])
		require.NotNil(t, res.Result)
		require.Equal(t, "COMPLETED", res.Result.State)
		require.JSONEq(t, `7`, string(res.Result.Output))
	})

	t.Run("PathSegmentsAreEscaped", func(t *testing.T) {
		t.Parallel()
		c, b := fake(t, http.StatusCreated, `{}`)
		_, err := c.Start(ctxT(t), "a b/c", client.StartRequest{})
		require.NoError(t, err)
		require.Equal(t, "/api/harvest/workflows/a%20b%2Fc/start", b.next(t).path)
	})

	t.Run("InvalidRawInputIsRefusedBeforeSending", func(t *testing.T) {
		t.Parallel()
		c, b := fake(t, http.StatusCreated, `{}`)
		_, err := c.Start(ctxT(t), "order", client.StartRequest{Input: json.RawMessage(`{nope`)})
		require.ErrorContains(t, err, "input")
		require.Empty(t, b.reqs)
	})
}

func TestStartResponseAbsentVersusFalse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name             string
		status           int
		body             string
		wantFresh, wantD *bool
	}{
		{"Absent", http.StatusCreated, `{"execution_id":"e1","state":"RUNNING"}`, nil, nil},
		{"Null", http.StatusCreated, `{"execution_id":"e1","started_fresh":null}`, nil, nil},
		{"FreshFalseDedupTrue", http.StatusOK, `{"execution_id":"e1","started_fresh":false,"deduplicated":true}`, ptr(false), ptr(true)},
		{"FreshTrueDedupFalse", http.StatusCreated, `{"execution_id":"e1","started_fresh":true,"deduplicated":false}`, ptr(true), ptr(false)},
		{"OnlyFresh", http.StatusOK, `{"execution_id":"e1","started_fresh":false}`, ptr(false), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, _ := fake(t, tt.status, tt.body)
			res, err := c.Start(ctxT(t), "order", client.StartRequest{})
			require.NoError(t, err)
			require.Equal(t, tt.status, res.Status)
			require.Equal(t, "e1", res.ExecutionID)
			require.Equal(t, tt.wantFresh, res.StartedFresh, "started_fresh")
			require.Equal(t, tt.wantD, res.Deduplicated, "deduplicated")
			require.JSONEq(t, tt.body, string(res.Raw))
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestSignal(t *testing.T) {
	t.Parallel()

	t.Run("PayloadIsTheBodyAndKeyTheHeader", func(t *testing.T) {
		t.Parallel()
		c, b := fake(t, http.StatusAccepted, `{"ok":true,"execution_id":"e1","signal_delivered":false}`)
		res, err := c.Signal(ctxT(t), "e1", "approved", map[string]string{"by": "ann"}, client.SignalOptions{IdempotencyKey: "k1"})
		require.NoError(t, err)
		require.False(t, res.SignalDelivered)
		require.True(t, res.OK)
		r := b.next(t)
		require.Equal(t, "/api/harvest/workflows/e1/signal/approved", r.path)
		require.Equal(t, "k1", r.header.Get("Idempotency-Key"))
		require.Empty(t, r.query)
		require.JSONEq(t, `{"by":"ann"}`, string(r.body))
	})

	t.Run("NilPayloadSendsNoBody", func(t *testing.T) {
		t.Parallel()
		c, b := fake(t, http.StatusAccepted, `{"ok":true,"execution_id":"e1","signal_delivered":true}`)
		res, err := c.Signal(ctxT(t), "e1", "go", nil, client.SignalOptions{})
		require.NoError(t, err)
		require.True(t, res.SignalDelivered)
		r := b.next(t)
		require.False(t, r.hasBody)
		require.Empty(t, r.header.Get("Content-Type"))
		_, hasKey := r.header["Idempotency-Key"]
		require.False(t, hasKey)
	})

	t.Run("EmptyIDIsRefusedBeforeSending", func(t *testing.T) {
		t.Parallel()
		c, b := fake(t, http.StatusAccepted, `{}`)
		_, err := c.Signal(ctxT(t), "", "go", nil, client.SignalOptions{})
		require.ErrorIs(t, err, client.ErrInvalid)
		require.Empty(t, b.reqs)
	})
}

func TestSignalWithStart(t *testing.T) {
	t.Parallel()
	c, b := fake(t, http.StatusCreated,
		`{"execution_id":"e1","workflow_name":"order","workflow_id":"w","state":"RUNNING","started_fresh":true,"signal_delivered":true}`)
	res, err := c.SignalWithStart(ctxT(t), "order", client.SignalWithStartRequest{
		WorkflowID: "w", SignalName: "approved", SignalPayload: json.RawMessage(`{"by":"bob"}`),
		Input: json.RawMessage(`{"sleep_ms":1}`), ReusePolicy: client.ReuseAllowDuplicate, IdempotencyKey: "sk",
	})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.Status)
	require.Equal(t, ptr(true), res.StartedFresh)
	require.True(t, res.SignalDelivered)
	r := b.next(t)
	require.Equal(t, "/api/harvest/workflows/order/signal-with-start", r.path)
	require.Equal(t, "sk", r.header.Get("Idempotency-Key"))
	require.Equal(t, map[string]any{
		"workflow_id": "w", "signal_name": "approved", "signal_payload": map[string]any{"by": "bob"},
		"input": map[string]any{"sleep_ms": float64(1)}, "id_reuse_policy": "allow_duplicate",
	}, bodyMap(t, r.body))
}

func TestErrorDecoding(t *testing.T) {
	t.Parallel()
	sentinels := []error{client.ErrNotFound, client.ErrConflict, client.ErrTerminal, client.ErrInvalid, client.ErrUnavailable, client.ErrTooLarge,
		client.ErrUnauthenticated, client.ErrForbidden}
	tests := []struct {
		name      string
		status    int
		body      string
		wantCode  string
		wantMsg   string
		wantClass error // nil: matches no sentinel
		wantText  string
	}{
		{"NotFound", 404, `{"error":"execution not found","code":"not_found"}`, "not_found", "execution not found", client.ErrNotFound,
			"execution not found (not_found, HTTP 404)"},
		{"UnknownWorkflow", 404, `{"error":"workflow \"x\" is not registered","code":"unknown_workflow"}`, "unknown_workflow",
			`workflow "x" is not registered`, client.ErrNotFound, `workflow "x" is not registered (unknown_workflow, HTTP 404)`},
		{"Conflict", 409, `{"error":"taken","code":"conflict","existing_execution_id":"e0","existing_state":"RUNNING"}`, "conflict", "taken",
			client.ErrConflict, "taken (conflict, HTTP 409)"},
		{"TerminalIsNotConflict", 409, `{"error":"closed","code":"execution_terminal","execution_id":"e1","state":"COMPLETED"}`,
			"execution_terminal", "closed", client.ErrTerminal, "closed (execution_terminal, HTTP 409)"},
		{"InvalidJSON", 400, `{"error":"field x","code":"invalid_json"}`, "invalid_json", "field x", client.ErrInvalid, "field x (invalid_json, HTTP 400)"},
		{"InvalidArgument", 400, `{"error":"empty key","code":"invalid_argument"}`, "invalid_argument", "empty key", client.ErrInvalid,
			"empty key (invalid_argument, HTTP 400)"},
		{"TooLarge", 413, `{"error":"too big","code":"payload_too_large"}`, "payload_too_large", "too big", client.ErrTooLarge,
			"too big (payload_too_large, HTTP 413)"},
		{"Unavailable", 503, `{"error":"shard moved","code":"unavailable"}`, "unavailable", "shard moved", client.ErrUnavailable,
			"shard moved (unavailable, HTTP 503)"},
		{"Forbidden", 403, `{"error":"needs admin","code":"forbidden"}`, "forbidden", "needs admin", client.ErrForbidden,
			"needs admin (forbidden, HTTP 403)"},
		{"Unauthenticated", 401, `{"error":"no bearer token","code":"unauthenticated"}`, "unauthenticated", "no bearer token",
			client.ErrUnauthenticated, "no bearer token (unauthenticated, HTTP 401)"},
		{"ForgedHeaderIsInvalid", 400, `{"error":"X-Harvest-Shard","code":"forged_header"}`, "forged_header", "X-Harvest-Shard",
			client.ErrInvalid, "X-Harvest-Shard (forged_header, HTTP 400)"},
		{"ProxyUnauthorizedFallsBackToStatus", 401, "login required\n", "", "login required", client.ErrUnauthenticated,
			"login required (HTTP 401)"},
		{"ProxyForbiddenFallsBackToStatus", 403, "", "", "Forbidden", client.ErrForbidden, "Forbidden (HTTP 403)"},
		{"InternalHasNoSentinel", 500, `{"error":"internal error","code":"internal"}`, "internal", "internal error", nil,
			"internal error (internal, HTTP 500)"},
		{"ProxyTextFallsBackToStatus", 502, "bad gateway\n", "", "bad gateway", client.ErrUnavailable, "bad gateway (HTTP 502)"},
		{"EmptyBodyFallsBackToStatusText", 404, "", "", "Not Found", client.ErrNotFound, "Not Found (HTTP 404)"},
		{"UnknownCodeFallsBackToStatus", 409, `{"error":"hm","code":"brand_new"}`, "brand_new", "hm", client.ErrConflict,
			"hm (brand_new, HTTP 409)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, _ := fake(t, tt.status, tt.body)
			_, err := c.Describe(ctxT(t), "e1")
			var apiErr *client.Error
			require.ErrorAs(t, err, &apiErr)
			require.Equal(t, tt.status, apiErr.Status)
			require.Equal(t, tt.wantCode, apiErr.Code)
			require.Equal(t, tt.wantMsg, apiErr.Message)
			require.Equal(t, tt.wantText, err.Error())
			for _, s := range sentinels {
				require.Equal(t, s == tt.wantClass, errors.Is(err, s), "errors.Is(%v)", s)
			}
		})
	}

	t.Run("BodyKeepsExtraFields", func(t *testing.T) {
		t.Parallel()
		c, _ := fake(t, 409, `{"error":"taken","code":"conflict","existing_execution_id":"e0","existing_state":"RUNNING"}`)
		_, err := c.Start(ctxT(t), "order", client.StartRequest{WorkflowID: "w"})
		var apiErr *client.Error
		require.ErrorAs(t, err, &apiErr)
		require.Equal(t, "e0", apiErr.Field("existing_execution_id"))
		require.Equal(t, "RUNNING", apiErr.Body["existing_state"])
	})

	t.Run("TransportErrorIsNotAnAPIError", func(t *testing.T) {
		t.Parallel()
		c, b := fake(t, 200, `{}`)
		b.srv.Close()
		_, err := c.Describe(ctxT(t), "e1")
		require.Error(t, err)
		var apiErr *client.Error
		require.False(t, errors.As(err, &apiErr))
		require.ErrorContains(t, err, b.srv.URL+"/api/harvest/workflows/e1")
	})
}

func TestResult(t *testing.T) {
	t.Parallel()

	t.Run("NoContentIsNotClosed", func(t *testing.T) {
		t.Parallel()
		c, b := fake(t, http.StatusNoContent, "")
		res, closed, err := c.Result(ctxT(t), "e1", 10*time.Second)
		require.NoError(t, err)
		require.False(t, closed)
		require.Nil(t, res)
		r := b.next(t)
		require.Equal(t, "/api/harvest/workflows/e1/result", r.path)
		require.Equal(t, []string{"10s"}, r.query["wait"])
	})

	t.Run("ClosedRun", func(t *testing.T) {
		t.Parallel()
		c, _ := fake(t, http.StatusOK,
			`{"execution_id":"e1","state":"COMPLETED","output":{"status":"approved"},"error":null,"completed_at":"2025-01-02T03:04:05Z"}`)
		res, closed, err := c.Result(ctxT(t), "e1", 0)
		require.NoError(t, err)
		require.True(t, closed)
		require.Equal(t, "COMPLETED", res.State)
		require.JSONEq(t, `{"status":"approved"}`, string(res.Output))
		require.Equal(t, time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), res.CompletedAt.UTC())
	})
}

func TestReadQueries(t *testing.T) {
	t.Parallel()

	t.Run("HistoryAfterZeroIsSentNilIsNot", func(t *testing.T) {
		t.Parallel()
		c, b := fake(t, http.StatusOK, `{"events":[{"event_id":1,"type":"SignalReceived","data":{}}],"next_cursor":1,"total_events":9,"last_event_id":8}`)
		zero := int64(0)
		page, err := c.History(ctxT(t), "e1", client.HistoryQuery{After: &zero, Limit: 1, EventTypes: []string{"SignalReceived", "TimerFired"}})
		require.NoError(t, err)
		require.Equal(t, ptr(int64(1)), page.NextCursor)
		require.Equal(t, "SignalReceived", page.Events[0].Type)
		r := b.next(t)
		require.Equal(t, "/api/harvest/workflows/e1/history", r.path)
		require.Equal(t, map[string][]string{"after": {"0"}, "limit": {"1"}, "event_type": {"SignalReceived", "TimerFired"}}, r.query)

		_, err = c.History(ctxT(t), "e1", client.HistoryQuery{})
		require.NoError(t, err)
		require.Empty(t, b.next(t).query)
	})

	t.Run("List", func(t *testing.T) {
		t.Parallel()
		c, b := fake(t, http.StatusOK, `{"workflows":[{"execution_id":"e1","state":"RUNNING"}],"next_cursor":"abc"}`)
		page, err := c.List(ctxT(t), client.ListQuery{States: []string{"RUNNING", "FAILED"}, WorkflowName: "order",
			WorkflowID: "w", PageSize: 5, Cursor: "c0", Order: client.OrderAsc})
		require.NoError(t, err)
		require.Equal(t, "abc", page.NextCursor)
		require.Len(t, page.Workflows, 1)
		r := b.next(t)
		require.Equal(t, "/api/harvest/workflows", r.path)
		require.Equal(t, map[string][]string{"state": {"RUNNING", "FAILED"}, "workflow_name": {"order"}, "workflow_id": {"w"},
			"page_size": {"5"}, "cursor": {"c0"}, "order": {"asc"}}, r.query)
	})

	t.Run("ListStartedRangeAndCounts", func(t *testing.T) {
		t.Parallel()
		c, b := fake(t, http.StatusOK, `{"workflows":[],"counts":{"RUNNING":3,"FAILED":0},"status":"partial","unavailable_shards":[2]}`)
		after := time.Date(2026, 1, 2, 15, 4, 5, 123_000_000, time.FixedZone("", 3600))
		page, err := c.List(ctxT(t), client.ListQuery{StartedAfter: after, StartedBefore: after.Add(time.Hour), Counts: true})
		require.NoError(t, err)
		require.Equal(t, map[string]int64{"RUNNING": 3, "FAILED": 0}, page.Counts)
		require.Equal(t, "partial", page.Status)
		require.Equal(t, []uint16{2}, page.UnavailableShards)
		require.Equal(t, map[string][]string{"started_after": {"2026-01-02T15:04:05.123+01:00"},
			"started_before": {"2026-01-02T16:04:05.123+01:00"}, "counts": {"true"}}, b.next(t).query)
	})
}

func TestCloseRequests(t *testing.T) {
	t.Parallel()
	c, b := fake(t, http.StatusOK, `{"ok":true,"execution_id":"e1","state":"RUNNING","reason":"r","cancel_requested":true,"newly_cancelled":true}`)
	res, err := c.Cancel(ctxT(t), "e1", "r")
	require.NoError(t, err)
	require.True(t, res.NewlyCancelled)
	require.True(t, res.CancelRequested)
	require.Equal(t, "RUNNING", res.State)
	r := b.next(t)
	require.Equal(t, "/api/harvest/workflows/e1/cancel", r.path)
	require.JSONEq(t, `{"reason":"r"}`, string(r.body))

	_, err = c.Terminate(ctxT(t), "e1", "")
	require.NoError(t, err)
	r = b.next(t)
	require.Equal(t, "/api/harvest/workflows/e1/terminate", r.path)
	require.JSONEq(t, `{}`, string(r.body))
}

func TestBaseURL(t *testing.T) {
	t.Parallel()
	_, b := fake(t, http.StatusOK, `{"workflows":[]}`)
	for _, base := range []string{b.srv.URL + "/", b.srv.URL[len("http://"):]} {
		_, err := client.New(base).List(ctxT(t), client.ListQuery{})
		require.NoError(t, err, base)
		require.Equal(t, "/api/harvest/workflows", b.next(t).path)
	}
	_, err := client.New(b.srv.URL+"/proxy").List(ctxT(t), client.ListQuery{})
	require.NoError(t, err)
	require.Equal(t, "/proxy/api/harvest/workflows", b.next(t).path)
}

// countingTransport counts the requests it carries.
type countingTransport struct{ n chan struct{} }

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n <- struct{}{}
	return http.DefaultTransport.RoundTrip(r)
}

func TestWithHTTPClient(t *testing.T) {
	t.Parallel()
	_, b := fake(t, http.StatusOK, `{"workflows":[]}`)
	tr := countingTransport{n: make(chan struct{}, 1)}
	_, err := client.New(b.srv.URL, client.WithHTTPClient(&http.Client{Transport: tr})).List(ctxT(t), client.ListQuery{})
	require.NoError(t, err)
	require.Len(t, tr.n, 1)
}

package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/google/uuid"

	"github.com/harvestd/harvest/auth"
	"github.com/harvestd/harvest/engine"
)

// Outbound is a node's engine.Outbound: each keyed start, signal,
// cancel or terminate of an engine's outbox is a request to this node's
// own API, served in process through the normal routing. A shard this
// node serves is called directly; any other request is forwarded to the
// shard's owner over the node-to-node path, signed with the cluster key,
// like a client's. The caller is the system identity (admin scope), and,
// like a request from another node, may use the reserved "hv:" keys and
// signal names.
//
// The engines need it in their Config before the Server exists: create
// it first, and Bind it to the node's Server once that is built; until
// then every operation fails (the outbox retries it).
type Outbound struct{ s atomic.Pointer[Server] }

// Bind makes s serve the operations.
func (o *Outbound) Bind(s *Server) { o.s.Store(s) }

// systemIdentity is the identity of the node's own outbox requests.
var systemIdentity = auth.Identity{Scope: auth.ScopeAdmin, TokenID: "system"}

// systemCallKey marks a request's context as the node's own outbox call;
// only code in this process can set it.
type systemCallKey struct{}

func isSystemCall(r *http.Request) bool { return r.Context().Value(systemCallKey{}) != nil }

var _ engine.Outbound = (*Outbound)(nil)

// errUnbound: the Outbound has no Server yet.
var errUnbound = errors.New("outbound: the node's API is not built yet")

func (o *Outbound) Start(ctx context.Context, req engine.StartRequest) (engine.StartResult, error) {
	body := map[string]any{"workflow_id": req.WorkflowID, "input": json.RawMessage(orNull(req.Input))}
	if req.ReusePolicy != "" {
		body["reuse_policy"] = string(req.ReusePolicy)
	}
	if req.ConflictPolicy != "" {
		body["conflict_policy"] = string(req.ConflictPolicy)
	}
	if req.ExecutionTimeout != nil {
		body["execution_timeout"] = req.ExecutionTimeout.String()
	}
	if req.RunTimeout != nil {
		body["run_timeout"] = req.RunTimeout.String()
	}
	addFlow(body, req)
	raw, err := json.Marshal(body)
	if err != nil {
		return engine.StartResult{}, fmt.Errorf("encode start: %w", err)
	}
	var out startAnswer
	if err := o.call(ctx, "/workflows/"+url.PathEscape(req.WorkflowName)+"/start", req.IdempotencyKey, raw, &out); err != nil {
		return engine.StartResult{}, err
	}
	id, err := uuid.Parse(out.ExecutionID)
	if err != nil {
		return engine.StartResult{}, fmt.Errorf("start answered execution id %q: %w", out.ExecutionID, err)
	}
	return engine.StartResult{ExecutionID: id, WorkflowName: out.WorkflowName, WorkflowID: out.WorkflowID, State: out.State,
		StartedFresh: deref(out.StartedFresh), Deduplicated: deref(out.Deduplicated)}, nil
}

// addFlow adds req's flow control fields to a start body (those set).
func addFlow(body map[string]any, req engine.StartRequest) {
	for name, v := range map[string]any{"concurrency_key": req.ConcurrencyKey, "fairness_key": req.FairnessKey} {
		if v != "" {
			body[name] = v
		}
	}
	for name, v := range map[string]int{"priority": req.Priority, "fairness_weight": req.FairnessWeight} {
		if v != 0 {
			body[name] = v
		}
	}
}

func (o *Outbound) Signal(ctx context.Context, req engine.SignalRequest) (engine.SignalResult, error) {
	var out struct {
		Delivered bool `json:"signal_delivered"`
	}
	path := "/workflows/" + req.ExecutionID.String() + "/signal/" + url.PathEscape(req.SignalName)
	if err := o.call(ctx, path, req.IdempotencyKey, orNull(req.Payload), &out); err != nil {
		return engine.SignalResult{}, err
	}
	return engine.SignalResult{ExecutionID: req.ExecutionID, Delivered: out.Delivered}, nil
}

func (o *Outbound) Cancel(ctx context.Context, id uuid.UUID, reason string) (engine.CloseResult, error) {
	return o.close(ctx, id, "cancel", reason)
}

func (o *Outbound) Terminate(ctx context.Context, id uuid.UUID, reason string) (engine.CloseResult, error) {
	return o.close(ctx, id, "terminate", reason)
}

func (o *Outbound) close(ctx context.Context, id uuid.UUID, verb, reason string) (engine.CloseResult, error) {
	raw, err := json.Marshal(closeBody{Reason: reason})
	if err != nil {
		return engine.CloseResult{}, fmt.Errorf("encode %s: %w", verb, err)
	}
	var out struct {
		State      string `json:"state"`
		Terminated bool   `json:"newly_terminated"`
		Cancelled  bool   `json:"newly_cancelled"`
	}
	if err := o.call(ctx, "/workflows/"+id.String()+"/"+verb, "", raw, &out); err != nil {
		return engine.CloseResult{}, err
	}
	return engine.CloseResult{ExecutionID: id, State: out.State, Reason: reason, Newly: out.Terminated || out.Cancelled}, nil
}

// call serves POST path with body in process and decodes a 2xx answer
// into out; any other answer is an error (outboundError).
func (o *Outbound) call(ctx context.Context, path, key string, body []byte, out any) error {
	w, err := o.serve(ctx, path, key, body)
	if err != nil {
		return err
	}
	if w.status/100 != 2 {
		return outboundError(w.status, w.body.Bytes())
	}
	if err := json.Unmarshal(w.body.Bytes(), out); err != nil {
		return fmt.Errorf("outbound answer of %s: %w", path, err)
	}
	return nil
}

// serve serves POST path with body in process and returns the answer.
func (o *Outbound) serve(ctx context.Context, path, key string, body []byte) (*answerWriter, error) {
	return o.serveMethod(ctx, http.MethodPost, path, key, body)
}

// serveMethod serves method path with body in process and returns the
// answer.
func (o *Outbound) serveMethod(ctx context.Context, method, path, key string, body []byte) (*answerWriter, error) {
	ctx = context.WithValue(ctx, systemCallKey{}, true)
	req, err := http.NewRequestWithContext(ctx, method, BasePath+path, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("outbound request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	s := o.s.Load()
	if s == nil {
		return nil, errUnbound
	}
	w := &answerWriter{header: http.Header{}}
	s.gin.ServeHTTP(w, req)
	return w, nil
}

// outboundError turns an error answer into the engine's error for it: a
// definite one for the answers a retry cannot change (engine.IsDefinite).
func outboundError(status int, body []byte) error {
	var e struct {
		Error       string `json:"error"`
		Code        string `json:"code"`
		ExecutionID string `json:"execution_id"`
		State       string `json:"state"`
		Existing    string `json:"existing_execution_id"`
		ExistingSt  string `json:"existing_state"`
	}
	_ = json.Unmarshal(body, &e)
	switch {
	case e.Code == codeNotFound:
		return fmt.Errorf("%s: %w", e.Error, engine.ErrNotFound)
	case e.Code == codeUnknownWorkflow:
		return fmt.Errorf("%s: %w", e.Error, engine.ErrUnknownWorkflow)
	case e.Code == codeTerminal:
		return &engine.TerminalError{ExecutionID: e.ExecutionID, State: e.State}
	case e.Code == codeAdmissionBlocked:
		var gate struct {
			GateID string `json:"gate_id"`
			Reason string `json:"reason"`
		}
		_ = json.Unmarshal(body, &gate)
		return &engine.GateError{GateID: gate.GateID, Reason: gate.Reason}
	case e.Code == codeConflict:
		return &engine.ConflictError{ExistingExecutionID: e.Existing, ExistingState: e.ExistingSt}
	case status >= 400 && status < 500 && status != http.StatusRequestTimeout && status != http.StatusTooManyRequests:
		return &engine.RefusedError{Status: status, Code: e.Code, Message: e.Error}
	}
	return fmt.Errorf("outbound request answered %d %s: %s", status, e.Code, strings.TrimSpace(e.Error))
}

func orNull(b []byte) []byte {
	if len(b) == 0 {
		return []byte("null")
	}
	return b
}

// answerWriter is the http.ResponseWriter of an in-process request.
type answerWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *answerWriter) Header() http.Header { return w.header }

func (w *answerWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.body.Write(b)
}

func (w *answerWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

// Reset serves POST /workflows/{id}/reset in process, keyed.
func (o *Outbound) Reset(ctx context.Context, req engine.ResetRequest) (engine.ResetResult, error) {
	b := resetBody{Reason: req.Reason, Point: req.Point}
	if req.Point == "" {
		b.EventID = &req.EventID
	}
	raw, err := json.Marshal(b)
	if err != nil {
		return engine.ResetResult{}, fmt.Errorf("encode reset: %w", err)
	}
	var out struct {
		ExecutionID uuid.UUID `json:"execution_id"`
		WorkflowID  string    `json:"workflow_id"`
		ResetFrom   uuid.UUID `json:"reset_from"`
		EventID     int64     `json:"event_id"`
		Replaced    uuid.UUID `json:"replaced_execution_id"`
		Terminated  bool      `json:"terminated"`
		Newly       bool      `json:"newly_reset"`
	}
	if err := o.call(ctx, "/workflows/"+req.ExecutionID.String()+"/reset", req.IdempotencyKey, raw, &out); err != nil {
		return engine.ResetResult{}, err
	}
	return engine.ResetResult{ExecutionID: out.ExecutionID, WorkflowID: out.WorkflowID, ResetFrom: out.ResetFrom,
		EventID: out.EventID, Replaced: out.Replaced, Terminated: out.Terminated, Newly: out.Newly}, nil
}

package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// ReusePolicy decides whether a start may reuse a workflow id that a run
// already holds or held (reuse_policy of start, id_reuse_policy of
// signal-with-start). Empty leaves the server's default.
type ReusePolicy string

// Reuse policies.
const (
	ReuseAllowDuplicate           ReusePolicy = "allow_duplicate"
	ReuseRejectDuplicate          ReusePolicy = "reject_duplicate"
	ReuseAllowDuplicateFailedOnly ReusePolicy = "allow_duplicate_failed_only"
	ReuseTerminateIfRunning       ReusePolicy = "terminate_if_running"
)

// ConflictPolicy decides what a start does when a run holding the workflow
// id is still running. Empty sends no conflict_policy.
type ConflictPolicy string

// Conflict policies.
const (
	ConflictUnspecified       ConflictPolicy = "unspecified"
	ConflictFail              ConflictPolicy = "fail"
	ConflictUseExisting       ConflictPolicy = "use_existing"
	ConflictTerminateExisting ConflictPolicy = "terminate_existing"
)

// errEmptyID refuses a request whose execution id is empty before it is
// sent: the path would name another route.
var errEmptyID = fmt.Errorf("execution id is empty: %w", ErrInvalid)

// StartRequest is the body of a start (plus its Idempotency-Key header).
// Input and Memo are encoded with encoding/json; a json.RawMessage is sent
// as is; nil sends no field.
type StartRequest struct {
	// WorkflowID is the business id; empty lets the server mint one.
	WorkflowID string
	Input      any
	// Queue is the task queue; empty is the server's "default".
	Queue string
	Memo  any
	// IdempotencyKey, when not empty, is sent as the Idempotency-Key
	// header.
	IdempotencyKey string
	ReusePolicy    ReusePolicy
	ConflictPolicy ConflictPolicy
	// Delay, when positive, defers the run's first task (sent as a Go
	// duration string, "90s").
	Delay time.Duration
	// StartAt, when not zero, is when the first task runs (not with
	// Delay; at most 5 minutes in the past).
	StartAt time.Time
	// ExecutionTimeout and RunTimeout, when positive, close the run
	// TIMED_OUT once they pass (override the workflow's defaults).
	ExecutionTimeout time.Duration
	RunTimeout       time.Duration
	// CompletionCallbacks are POSTed the result when the run closes.
	CompletionCallbacks []Callback
	// ConcurrencyKey names the start's key under its workflow's
	// concurrency limit (it wins over the limit's key pointer); Priority
	// (1 first … 5 last; 0 is the server's default, 3) and FairnessKey
	// order the dispatch of its run while it is QUEUED; FairnessWeight
	// (1 … 1000; 0 is the server's default, 1) is how many turns its
	// fairness key takes for one of a key of weight 1. A workflow under no
	// limit ignores them.
	ConcurrencyKey string
	Priority       int
	FairnessKey    string
	FairnessWeight int
	// Wait, when positive, asks the server to wait up to this long (it
	// caps the wait, at 30 s by default) for the run to close before it
	// answers: StartResponse.Result is then the run's result. A replay
	// waits too, so a retried call gets the same result. The wait counts
	// against the retry policy's MaxElapsed: a keyed start whose answer
	// is lost after a wait longer than that is not resent.
	Wait time.Duration
}

// Callback is a completion callback: the server POSTs the run's result to
// URL, with Headers, when the run closes. The server refuses URLs that are
// not http(s) or reach a blocked address (ErrCallbackRefused).
type Callback struct {
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
}

type startBody struct {
	WorkflowID     string          `json:"workflow_id,omitempty"`
	Input          json.RawMessage `json:"input,omitempty"`
	Queue          string          `json:"queue,omitempty"`
	Memo           json.RawMessage `json:"memo,omitempty"`
	ReusePolicy    ReusePolicy     `json:"reuse_policy,omitempty"`
	ConflictPolicy ConflictPolicy  `json:"conflict_policy,omitempty"`
	Delay          string          `json:"delay,omitempty"`
	StartAt        *time.Time      `json:"start_at,omitempty"`
	Callbacks      []Callback      `json:"completion_callbacks,omitempty"`
	ExecTimeout    string          `json:"execution_timeout,omitempty"`
	RunTimeout     string          `json:"run_timeout,omitempty"`
	ConcurrencyKey string          `json:"concurrency_key,omitempty"`
	Priority       int             `json:"priority,omitempty"`
	FairnessKey    string          `json:"fairness_key,omitempty"`
	FairnessWeight int             `json:"fairness_weight,omitempty"`
}

// StartResponse is the answer of a start.
type StartResponse struct {
	// Status is the HTTP status: 201 when this request created the run,
	// 200 when it was deduplicated or attached to a running one.
	Status       int    `json:"-"`
	ExecutionID  string `json:"execution_id"`
	WorkflowName string `json:"workflow_name"`
	WorkflowID   string `json:"workflow_id"`
	State        string `json:"state"`
	// StartedFresh is nil when the server omitted it (a start with no
	// idempotency key and no conflict policy).
	StartedFresh *bool `json:"started_fresh"`
	// Deduplicated is nil when the server omitted it (no idempotency key).
	Deduplicated *bool `json:"deduplicated"`
	// LatestExecutionID and LatestState are set in a replay whose run
	// continued as new: the current run of its chain (ExecutionID and
	// State are the first run's).
	LatestExecutionID string `json:"latest_execution_id,omitempty"`
	LatestState       string `json:"latest_state,omitempty"`
	// Result is the run's result when the start waited (StartRequest.Wait)
	// and the run closed in time; nil otherwise (poll with Client.Result).
	// Its Raw is not set: the whole body is in Raw.
	Result *Result `json:"result"`
	// Raw is the server's JSON body.
	Raw json.RawMessage `json:"-"`
}

// Start starts (or deduplicates, or attaches to) a run of workflow name.
func (c *Client) Start(ctx context.Context, name string, req StartRequest) (*StartResponse, error) {
	body := startBody{WorkflowID: req.WorkflowID, Queue: req.Queue, ReusePolicy: req.ReusePolicy, ConflictPolicy: req.ConflictPolicy,
		Callbacks: req.CompletionCallbacks, ConcurrencyKey: req.ConcurrencyKey, Priority: req.Priority, FairnessKey: req.FairnessKey,
		FairnessWeight: req.FairnessWeight}
	if req.Delay != 0 {
		body.Delay = req.Delay.String()
	}
	if req.ExecutionTimeout > 0 {
		body.ExecTimeout = req.ExecutionTimeout.String()
	}
	if req.RunTimeout > 0 {
		body.RunTimeout = req.RunTimeout.String()
	}
	if !req.StartAt.IsZero() {
		at := req.StartAt.UTC()
		body.StartAt = &at
	}
	var err error
	if body.Input, err = rawJSON("input", req.Input); err != nil {
		return nil, err
	}
	if body.Memo, err = rawJSON("memo", req.Memo); err != nil {
		return nil, err
	}
	enc, err := encodeBody(body)
	if err != nil {
		return nil, err
	}
	var q url.Values
	if req.Wait > 0 {
		q = url.Values{"wait": {req.Wait.String()}}
	}
	var res StartResponse
	rep, err := c.do(ctx, call{method: http.MethodPost, path: "/workflows/" + seg(name) + "/start", query: q, body: enc,
		key: req.IdempotencyKey, route: byKey(name, req.WorkflowID, req.IdempotencyKey)}, &res)
	if err != nil {
		return nil, err
	}
	res.Status, res.Raw = rep.status, rep.body
	return &res, nil
}

// SignalOptions are the optional parts of a signal.
type SignalOptions struct {
	// IdempotencyKey, when not empty, is sent as the Idempotency-Key
	// header; the server delivers a key at most once per execution.
	IdempotencyKey string
}

// SignalResponse is the answer of a signal.
type SignalResponse struct {
	OK          bool   `json:"ok"`
	ExecutionID string `json:"execution_id"`
	// SignalDelivered is false when the idempotency key had already been
	// delivered: no event was added.
	SignalDelivered bool `json:"signal_delivered"`
	// CurrentExecutionID is set when the request reached a later run than
	// ExecutionID: the current run of its continue-as-new chain.
	CurrentExecutionID string `json:"current_execution_id,omitempty"`
	// Raw is the server's JSON body.
	Raw json.RawMessage `json:"-"`
}

// Signal sends signal to a run. payload is encoded with encoding/json (a
// json.RawMessage as is); nil sends an empty body, which the server reads
// as null.
func (c *Client) Signal(ctx context.Context, executionID, signal string, payload any, opts SignalOptions) (*SignalResponse, error) {
	if executionID == "" {
		return nil, errEmptyID
	}
	if signal == "" {
		return nil, fmt.Errorf("signal name is empty: %w", ErrInvalid)
	}
	body, err := rawJSON("signal payload", payload)
	if err != nil {
		return nil, err
	}
	var res SignalResponse
	rep, err := c.do(ctx, call{method: http.MethodPost, path: "/workflows/" + seg(executionID) + "/signal/" + seg(signal),
		body: body, key: opts.IdempotencyKey, route: byExecution(executionID)}, &res)
	if err != nil {
		return nil, err
	}
	res.Raw = rep.body
	return &res, nil
}

// SignalWithStartRequest is the body of a signal-with-start (plus its
// Idempotency-Key header).
type SignalWithStartRequest struct {
	// WorkflowID is required: the business id to signal or start.
	WorkflowID string
	// SignalName is required.
	SignalName    string
	SignalPayload any
	// Input is the input of a started run.
	Input any
	Queue string
	Memo  any
	// ReusePolicy is sent as id_reuse_policy.
	ReusePolicy ReusePolicy
	// IdempotencyKey is the signal's key, scoped to (workflow name,
	// WorkflowID); sent as the Idempotency-Key header.
	IdempotencyKey string
}

type signalWithStartBody struct {
	WorkflowID    string          `json:"workflow_id"`
	SignalName    string          `json:"signal_name"`
	SignalPayload json.RawMessage `json:"signal_payload,omitempty"`
	Input         json.RawMessage `json:"input,omitempty"`
	Queue         string          `json:"queue,omitempty"`
	Memo          json.RawMessage `json:"memo,omitempty"`
	ReusePolicy   ReusePolicy     `json:"id_reuse_policy,omitempty"`
}

// SignalWithStartResponse is the answer of a signal-with-start.
type SignalWithStartResponse struct {
	// Status is the HTTP status: 201 when a run was started, else 200.
	Status       int    `json:"-"`
	ExecutionID  string `json:"execution_id"`
	WorkflowName string `json:"workflow_name"`
	WorkflowID   string `json:"workflow_id"`
	State        string `json:"state"`
	// StartedFresh is nil when the server omitted it.
	StartedFresh *bool `json:"started_fresh"`
	// SignalDelivered is false when the key had already been delivered.
	SignalDelivered bool `json:"signal_delivered"`
	// Raw is the server's JSON body.
	Raw json.RawMessage `json:"-"`
}

// SignalWithStart signals the run holding (name, req.WorkflowID), starting
// one first when none is running.
func (c *Client) SignalWithStart(ctx context.Context, name string, req SignalWithStartRequest) (*SignalWithStartResponse, error) {
	body := signalWithStartBody{WorkflowID: req.WorkflowID, SignalName: req.SignalName, Queue: req.Queue, ReusePolicy: req.ReusePolicy}
	var err error
	if body.SignalPayload, err = rawJSON("signal payload", req.SignalPayload); err != nil {
		return nil, err
	}
	if body.Input, err = rawJSON("input", req.Input); err != nil {
		return nil, err
	}
	if body.Memo, err = rawJSON("memo", req.Memo); err != nil {
		return nil, err
	}
	enc, err := encodeBody(body)
	if err != nil {
		return nil, err
	}
	var res SignalWithStartResponse
	rep, err := c.do(ctx, call{method: http.MethodPost, path: "/workflows/" + seg(name) + "/signal-with-start", body: enc, key: req.IdempotencyKey,
		route: byKey(name, req.WorkflowID, "")}, &res)
	if err != nil {
		return nil, err
	}
	res.Status, res.Raw = rep.status, rep.body
	return &res, nil
}

type reasonBody struct {
	Reason string `json:"reason,omitempty"`
}

// CancelResponse is the answer of a cancel: the request is recorded, and
// the run (State RUNNING) closes when its code returns, CANCELLED unless
// the code chooses otherwise; wait for it with Result.
type CancelResponse struct {
	OK          bool   `json:"ok"`
	ExecutionID string `json:"execution_id"`
	State       string `json:"state"`
	Reason      string `json:"reason"`
	// CancelRequested is true once the run has a cancel request.
	CancelRequested bool `json:"cancel_requested"`
	// NewlyCancelled is false for a repeat: the run had a request already.
	NewlyCancelled bool `json:"newly_cancelled"`
	// CurrentExecutionID is set when the request reached a later run than
	// ExecutionID: the current run of its continue-as-new chain.
	CurrentExecutionID string `json:"current_execution_id,omitempty"`
	// Raw is the server's JSON body.
	Raw json.RawMessage `json:"-"`
}

// Cancel asks a running run to cancel (cooperatively: its code sees the
// request and may clean up first). A closed run is an error matching
// ErrTerminal.
func (c *Client) Cancel(ctx context.Context, executionID, reason string) (*CancelResponse, error) {
	var res CancelResponse
	raw, err := c.close(ctx, executionID, "cancel", reason, &res)
	if err != nil {
		return nil, err
	}
	res.Raw = raw
	return &res, nil
}

// TerminateResponse is the answer of a terminate.
type TerminateResponse struct {
	OK          bool   `json:"ok"`
	ExecutionID string `json:"execution_id"`
	State       string `json:"state"`
	Reason      string `json:"reason"`
	// NewlyTerminated is false when the run was already closed (a no-op).
	NewlyTerminated bool `json:"newly_terminated"`
	// CurrentExecutionID is set when the request reached a later run than
	// ExecutionID: the current run of its continue-as-new chain.
	CurrentExecutionID string `json:"current_execution_id,omitempty"`
	// Raw is the server's JSON body.
	Raw json.RawMessage `json:"-"`
}

// Terminate force-closes a run as TERMINATED; terminating a closed run is
// a no-op.
func (c *Client) Terminate(ctx context.Context, executionID, reason string) (*TerminateResponse, error) {
	var res TerminateResponse
	raw, err := c.close(ctx, executionID, "terminate", reason, &res)
	if err != nil {
		return nil, err
	}
	res.Raw = raw
	return &res, nil
}

func (c *Client) close(ctx context.Context, executionID, verb, reason string, out any) (json.RawMessage, error) {
	if executionID == "" {
		return nil, errEmptyID
	}
	enc, err := encodeBody(reasonBody{Reason: reason})
	if err != nil {
		return nil, err
	}
	// Terminating twice is a no-op: safe to retry after a lost answer.
	rep, err := c.do(ctx, call{method: http.MethodPost, path: "/workflows/" + seg(executionID) + "/" + verb, body: enc,
		idempotent: verb == "terminate", route: byExecution(executionID)}, out)
	if err != nil {
		return nil, err
	}
	return rep.body, nil
}

package client

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/harvestd/harvest"
)

// SignalHandle sends one typed signal. Build it from the same
// harvest.Signal definition the workflow receives with, so that the name
// and the payload type cannot drift between sender and receiver.
type SignalHandle[T any] struct {
	c    *Client
	name string
}

// SignalOf returns the handle of sig on c.
func SignalOf[T any](c *Client, sig harvest.Signal[T]) SignalHandle[T] {
	return SignalHandle[T]{c: c, name: sig.Name()}
}

// Name is the signal name.
func (h SignalHandle[T]) Name() string { return h.name }

// Send sends payload to the run executionID. Without a key, signals are
// at-least-once, and Send is not retried once its request may have reached
// the server; prefer SendIdempotent.
func (h SignalHandle[T]) Send(ctx context.Context, executionID string, payload T) (*SignalResponse, error) {
	return h.send(ctx, executionID, payload, "")
}

// SendIdempotent sends payload with an idempotency key: the run receives
// the key at most once, and a repeat (or a retry of a lost answer) answers
// SignalDelivered false — also after the run closed. key must not be
// empty.
func (h SignalHandle[T]) SendIdempotent(ctx context.Context, executionID string, payload T, key string) (*SignalResponse, error) {
	if key == "" {
		return nil, fmt.Errorf("signal %s: idempotency key is empty: %w", h.name, ErrInvalid)
	}
	return h.send(ctx, executionID, payload, key)
}

func (h SignalHandle[T]) send(ctx context.Context, executionID string, payload T, key string) (*SignalResponse, error) {
	raw, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("encode signal payload: %w", err)
	}
	return h.c.Signal(ctx, executionID, h.name, json.RawMessage(raw), SignalOptions{IdempotencyKey: key})
}

// StartOption sets an optional part of a typed start.
type StartOption func(*StartRequest)

// WithWorkflowID sets the business id (default: minted by the server).
func WithWorkflowID(id string) StartOption { return func(r *StartRequest) { r.WorkflowID = id } }

// WithReusePolicy sets the workflow id reuse policy.
func WithReusePolicy(p ReusePolicy) StartOption { return func(r *StartRequest) { r.ReusePolicy = p } }

// WithConflictPolicy sets the policy against a running run holding the
// workflow id.
func WithConflictPolicy(p ConflictPolicy) StartOption {
	return func(r *StartRequest) { r.ConflictPolicy = p }
}

// WithQueue sets the task queue.
func WithQueue(q string) StartOption { return func(r *StartRequest) { r.Queue = q } }

// WithMemo sets the memo, encoded with encoding/json.
func WithMemo(memo any) StartOption { return func(r *StartRequest) { r.Memo = memo } }

// WithDelay defers the first task by d.
func WithDelay(d time.Duration) StartOption { return func(r *StartRequest) { r.Delay = d } }

// WithStartAt runs the first task at t.
func WithStartAt(t time.Time) StartOption { return func(r *StartRequest) { r.StartAt = t } }

// WithCompletionCallback adds a completion callback.
func WithCompletionCallback(url string, headers map[string]string) StartOption {
	return func(r *StartRequest) {
		r.CompletionCallbacks = append(r.CompletionCallbacks, Callback{URL: url, Headers: headers})
	}
}

// WorkflowHandle starts runs of one typed workflow and reads their typed
// results. Build it from the harvest.Workflow definition that the worker
// registers, so that the name and the types cannot drift, or, in a client
// that does not link the worker's code, from a harvest.WorkflowRef.
type WorkflowHandle[In, Out any] struct {
	c    *Client
	name string
}

// WorkflowOf returns the handle of wf on c. wf is a workflow definition
// (*harvest.Workflow) or a reference (harvest.WorkflowRef).
func WorkflowOf[In, Out any](c *Client, wf harvest.WorkflowType[In, Out]) WorkflowHandle[In, Out] {
	return WorkflowHandle[In, Out]{c: c, name: wf.Ref().Name()}
}

// Name is the workflow name.
func (h WorkflowHandle[In, Out]) Name() string { return h.name }

// Start starts a run with input in. Without a key it is not retried once
// its request may have reached the server; prefer StartIdempotent.
func (h WorkflowHandle[In, Out]) Start(ctx context.Context, in In, opts ...StartOption) (*StartResponse, error) {
	return h.start(ctx, in, "", opts)
}

// StartIdempotent starts a run with an idempotency key: within the
// server's idempotency window the same key answers the same run
// (Deduplicated true), whatever the input. key must not be empty.
func (h WorkflowHandle[In, Out]) StartIdempotent(ctx context.Context, in In, key string, opts ...StartOption) (*StartResponse, error) {
	if key == "" {
		return nil, fmt.Errorf("start %s: idempotency key is empty: %w", h.name, ErrInvalid)
	}
	return h.start(ctx, in, key, opts)
}

func (h WorkflowHandle[In, Out]) start(ctx context.Context, in In, key string, opts []StartOption) (*StartResponse, error) {
	raw, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("encode input: %w", err)
	}
	req := StartRequest{Input: json.RawMessage(raw)}
	for _, opt := range opts {
		opt(&req)
	}
	req.IdempotencyKey = key
	return h.c.Start(ctx, h.name, req)
}

// Result waits up to wait for the run to close (see Client.Result). closed
// is false when it is still running. A run that completed gives its
// decoded output; one that failed, was cancelled or terminated gives a
// *RunError.
func (h WorkflowHandle[In, Out]) Result(ctx context.Context, executionID string, wait time.Duration) (out Out, closed bool, err error) {
	r, closed, err := h.c.Result(ctx, executionID, wait)
	if err != nil || !closed {
		return out, closed, err
	}
	if r.State != StateCompleted {
		return out, true, &RunError{ExecutionID: r.ExecutionID, State: r.State, Failure: r.Error}
	}
	if err := json.Unmarshal(r.Output, &out); err != nil {
		return out, true, fmt.Errorf("decode output of %s run %s: %w", h.name, executionID, err)
	}
	return out, true, nil
}

// StateCompleted is the state of a run that returned its output.
const StateCompleted = "COMPLETED"

// RunError is the outcome of a run that closed without completing
// (FAILED, CANCELLED, TERMINATED, …).
type RunError struct {
	ExecutionID string
	State       string
	// Failure is the server's error object ({"message", "type", …}); may
	// be null.
	Failure json.RawMessage
}

func (e *RunError) Error() string {
	var f struct {
		Message string `json:"message"`
	}
	_ = json.Unmarshal(e.Failure, &f)
	if f.Message == "" {
		return fmt.Sprintf("run %s closed %s", e.ExecutionID, e.State)
	}
	return fmt.Sprintf("run %s closed %s: %s", e.ExecutionID, e.State, f.Message)
}

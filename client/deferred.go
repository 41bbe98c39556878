package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// Throttle paces the starts of Key: Rate starts per Per (default 1s);
// past MaxBacklog waiting starts (default 1,000) a start is refused with
// 429 and Retry-After.
type Throttle struct {
	Key        string   `json:"key"`
	Rate       int      `json:"rate"`
	Per        Duration `json:"per,omitempty"`
	MaxBacklog int      `json:"max_backlog,omitempty"`
}

// Debounce starts one run with the last input once Key had no start for
// Window, or MaxWait (default 1h) after the first at the latest.
type Debounce struct {
	Key     string   `json:"key"`
	Window  Duration `json:"window"`
	MaxWait Duration `json:"max_wait,omitempty"`
}

// Batch starts one run whose input is the JSON list of the inputs
// collected under Key, at MaxSize of them (default 100) or MaxWait
// (default 1m) after the first.
type Batch struct {
	Key     string
	MaxSize int
	MaxWait Duration
}

// DeferredStartRequest is a start with exactly one policy
// (docs/http-api.md, Deferred starts). It takes no idempotency key.
type DeferredStartRequest struct {
	// WorkflowID is the run's (a debounce: the last start's); none for a
	// batch.
	WorkflowID string
	// Input is any JSON-encodable value (json.RawMessage is sent as is).
	Input    any
	Throttle *Throttle
	Debounce *Debounce
	Batch    *Batch
}

// Deferred is a deferred start: State is pending, firing, started (its
// run is ExecutionID, started with the key hv:deferred:<ID>) or failed.
type Deferred struct {
	ID           string     `json:"deferred_id"`
	Policy       string     `json:"policy"`
	WorkflowName string     `json:"workflow_name"`
	Key          string     `json:"key"`
	State        string     `json:"state"`
	WorkflowID   string     `json:"workflow_id"`
	Starts       int        `json:"starts"`
	FirstAt      time.Time  `json:"first_at"`
	FireAt       time.Time  `json:"fire_at"`
	FiredAt      *time.Time `json:"fired_at"`
	ExecutionID  string     `json:"execution_id"`
	Reason       string     `json:"reason"`
	// Raw is the item's JSON object as the server sent it.
	Raw json.RawMessage `json:"-"`
}

type deferredBody struct {
	WorkflowID   string          `json:"workflow_id,omitempty"`
	Input        json.RawMessage `json:"input,omitempty"`
	Throttle     *Throttle       `json:"throttle,omitempty"`
	Debounce     *Debounce       `json:"debounce,omitempty"`
	BatchKey     *string         `json:"batch_key,omitempty"`
	BatchMaxSize int             `json:"batch_max_size,omitempty"`
	BatchMaxWait Duration        `json:"batch_max_wait,omitempty"`
}

// StartDeferred records a deferred start of workflow name (write scope)
// and returns the item it joined or opened. It is not idempotent: a
// start that may have reached the server is not resent.
func (c *Client) StartDeferred(ctx context.Context, name string, req DeferredStartRequest) (*Deferred, error) {
	body := deferredBody{WorkflowID: req.WorkflowID, Throttle: req.Throttle, Debounce: req.Debounce}
	var key string
	switch {
	case req.Throttle != nil:
		key = req.Throttle.Key
	case req.Debounce != nil:
		key = req.Debounce.Key
	case req.Batch != nil:
		key = req.Batch.Key
		body.BatchKey, body.BatchMaxSize, body.BatchMaxWait = &req.Batch.Key, req.Batch.MaxSize, req.Batch.MaxWait
	default:
		return nil, fmt.Errorf("a deferred start needs a throttle, debounce or batch policy: %w", ErrInvalid)
	}
	var err error
	if body.Input, err = rawJSON("input", req.Input); err != nil {
		return nil, err
	}
	enc, err := encodeBody(body)
	if err != nil {
		return nil, err
	}
	var out Deferred
	// once: a node whose forward to the key's shard failed answers 503
	// also when the owner recorded the start.
	rep, err := c.do(ctx, call{method: http.MethodPost, path: "/workflows/" + seg(name) + "/start", body: enc,
		route: byKey(name, "", key), once: true}, &out)
	if err != nil {
		return nil, err
	}
	out.Raw = rep.body
	return &out, nil
}

// DeferredStart reads a deferred start (read scope).
func (c *Client) DeferredStart(ctx context.Context, id string) (*Deferred, error) {
	if id == "" {
		return nil, fmt.Errorf("deferred id is empty: %w", ErrInvalid)
	}
	var out Deferred
	rep, err := c.do(ctx, call{method: http.MethodGet, path: "/deferred/" + seg(id)}, &out)
	if err != nil {
		return nil, err
	}
	out.Raw = rep.body
	return &out, nil
}

// PendingDeferred lists every shard's deferred starts not started yet,
// the soonest first (admin scope).
func (c *Client) PendingDeferred(ctx context.Context) ([]Deferred, error) {
	return getList(ctx, c, "/admin/deferred", "deferred", "deferred start", func(d *Deferred, raw json.RawMessage) { d.Raw = raw })
}

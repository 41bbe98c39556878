package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// Kinds of Limit.
const (
	// LimitWorkflow limits the runs of a workflow.
	LimitWorkflow = "workflow"
	// LimitActivity limits the attempts of an activity.
	LimitActivity = "activity"
)

// Limit is a flow control limit set at run time
// (/api/harvest/admin/limits). It replaces whole the limits its workflow
// or activity declares in code: an activity's limit with a rate and no
// MaxRunning lifts a declared concurrency limit, and a Limit of zeros
// lifts every declared one. DeleteLimit brings the declared limits back.
type Limit struct {
	// Kind is LimitWorkflow or LimitActivity.
	Kind string `json:"kind"`
	// Name is the workflow's or activity's name.
	Name string `json:"name"`
	// MaxRunning is the most runs (an activity's attempts) at once, per
	// key with KeyPointer; 0: no concurrency limit.
	MaxRunning int `json:"max_running"`
	// KeyPointer keys the concurrency limit by a value of the input, a
	// JSON pointer such as "/customer"; it needs MaxRunning.
	KeyPointer string `json:"key_pointer,omitempty"`
	// Scope is where a workflow's slots are counted: "shard" (also "")
	// or "cluster" (every shard's runs of a key together, through the
	// key's keeper); it needs MaxRunning.
	Scope string `json:"scope,omitempty"`
	// PerSecond is an activity's average rate of attempts; 0: no rate
	// limit. Activities only, as are Burst and RateKeyPointer.
	PerSecond float64 `json:"per_second,omitempty"`
	// Burst is the most attempts started at once (0: 1); it needs
	// PerSecond.
	Burst int `json:"burst,omitempty"`
	// RateKeyPointer keys the rate limit by a value of the activity's
	// input; it needs PerSecond.
	RateKeyPointer string `json:"rate_key_pointer,omitempty"`
	// UpdatedAt is when the limit was last set (set by the node).
	UpdatedAt time.Time `json:"updated_at"`
	// Raw is the limit's JSON object as the server sent it.
	Raw json.RawMessage `json:"-"`
}

// limitBody is the body of PUT /admin/limits/{kind}/{name}.
type limitBody struct {
	MaxRunning     int     `json:"max_running"`
	KeyPointer     string  `json:"key_pointer,omitempty"`
	Scope          string  `json:"scope,omitempty"`
	PerSecond      float64 `json:"per_second,omitempty"`
	Burst          int     `json:"burst,omitempty"`
	RateKeyPointer string  `json:"rate_key_pointer,omitempty"`
}

// SetLimit sets the limit of l.Kind and l.Name, replacing any, and
// returns it as stored. Setting the same limit again changes nothing, so
// it is retried. A field out of range answers ErrInvalid. It needs a
// token of scope admin.
func (c *Client) SetLimit(ctx context.Context, l Limit) (*Limit, error) {
	path, err := limitPath(l.Kind, l.Name)
	if err != nil {
		return nil, err
	}
	enc, err := encodeBody(limitBody{MaxRunning: l.MaxRunning, KeyPointer: l.KeyPointer, Scope: l.Scope,
		PerSecond: l.PerSecond, Burst: l.Burst, RateKeyPointer: l.RateKeyPointer})
	if err != nil {
		return nil, err
	}
	var out Limit
	rep, err := c.do(ctx, call{method: http.MethodPut, path: path, body: enc, idempotent: true}, &out)
	if err != nil {
		return nil, err
	}
	out.Raw = rep.body
	return &out, nil
}

// Limits lists every limit set at run time, by kind, then name. It
// needs a token of scope admin.
func (c *Client) Limits(ctx context.Context) ([]Limit, error) {
	return getList(ctx, c, "/admin/limits", "limits", "limit", func(l *Limit, raw json.RawMessage) { l.Raw = raw })
}

// DeleteLimit deletes the limit of kind and name: the limits its code
// declares apply again. An unknown limit answers ErrNotFound. It needs a
// token of scope admin.
func (c *Client) DeleteLimit(ctx context.Context, kind, name string) error {
	path, err := limitPath(kind, name)
	if err != nil {
		return err
	}
	_, err = c.do(ctx, call{method: http.MethodDelete, path: path, idempotent: true}, nil)
	return err
}

func limitPath(kind, name string) (string, error) {
	if kind != LimitWorkflow && kind != LimitActivity {
		return "", fmt.Errorf("limit kind %q: want %q or %q: %w", kind, LimitWorkflow, LimitActivity, ErrInvalid)
	}
	if name == "" {
		return "", fmt.Errorf("limit name is empty: %w", ErrInvalid)
	}
	return "/admin/limits/" + kind + "/" + seg(name), nil
}

package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// HTTPActivity is an HTTP activity registered at run time as the node
// shows it: every header value is "[redacted]".
type HTTPActivity struct {
	Name    string            `json:"name"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
	// Timeout bounds each attempt, e.g. "30s"; empty: the call's
	// start-to-close alone.
	Timeout   string             `json:"timeout,omitempty"`
	Retry     *HTTPActivityRetry `json:"retry,omitempty"`
	CreatedAt time.Time          `json:"created_at"`
	// Raw is the activity's JSON object as the server sent it.
	Raw json.RawMessage `json:"-"`
}

// HTTPActivityRetry is a registered activity's retry policy as the node
// shows it (durations like "1s"; absent fields are the defaults).
type HTTPActivityRetry struct {
	MaxAttempts        int      `json:"max_attempts,omitempty"`
	InitialInterval    string   `json:"initial_interval,omitempty"`
	BackoffCoefficient float64  `json:"backoff_coefficient,omitempty"`
	MaxInterval        string   `json:"max_interval,omitempty"`
	NonRetryableErrors []string `json:"non_retryable_errors,omitempty"`
}

// RegisterHTTPActivityRequest describes an HTTP activity workflows call
// by name (harvest.RemoteActivity).
type RegisterHTTPActivityRequest struct {
	// Name and URL (http or https, reachable under the node's outbound
	// address rules) are required.
	Name string
	URL  string
	// Headers are sent on every attempt; Idempotency-Key and Harvest-*
	// are reserved.
	Headers map[string]string
	// Timeout bounds each attempt (at most 10m); zero: the call's
	// start-to-close alone.
	Timeout time.Duration
	// Retry applies to calls that pass no retry policy; nil: the default.
	Retry *ActivityRetry
}

// ActivityRetry is the retry policy of a registration; zero fields are
// the defaults (3 attempts, 1s doubling up to 5m).
type ActivityRetry struct {
	MaxAttempts        int
	InitialInterval    time.Duration
	BackoffCoefficient float64
	MaxInterval        time.Duration
	NonRetryableErrors []string
}

// RegisterHTTPActivity registers an HTTP activity and returns it (its
// header values redacted). Registering the same one again changes
// nothing, so it is retried; a different one under the name, or the name
// of a Go activity of the node, answers ErrConflict. It needs a token of
// scope admin.
func (c *Client) RegisterHTTPActivity(ctx context.Context, req RegisterHTTPActivityRequest) (*HTTPActivity, error) {
	if req.Timeout < 0 {
		return nil, fmt.Errorf("activity timeout %s: must not be negative: %w", req.Timeout, ErrInvalid)
	}
	enc, err := encodeBody(registerBody(req))
	if err != nil {
		return nil, err
	}
	var a HTTPActivity
	rep, err := c.do(ctx, call{method: http.MethodPost, path: "/admin/activities", body: enc, idempotent: true}, &a)
	if err != nil {
		return nil, err
	}
	a.Raw = rep.body
	return &a, nil
}

type activityBody struct {
	Name    string            `json:"name"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
	Timeout string            `json:"timeout,omitempty"`
	Retry   *retryBody        `json:"retry,omitempty"`
}

type retryBody struct {
	MaxAttempts        int      `json:"max_attempts,omitempty"`
	InitialInterval    string   `json:"initial_interval,omitempty"`
	BackoffCoefficient float64  `json:"backoff_coefficient,omitempty"`
	MaxInterval        string   `json:"max_interval,omitempty"`
	NonRetryableErrors []string `json:"non_retryable_errors,omitempty"`
}

func registerBody(req RegisterHTTPActivityRequest) activityBody {
	b := activityBody{Name: req.Name, URL: req.URL, Headers: req.Headers, Timeout: durationString(req.Timeout)}
	if r := req.Retry; r != nil {
		b.Retry = &retryBody{MaxAttempts: r.MaxAttempts, InitialInterval: durationString(r.InitialInterval),
			BackoffCoefficient: r.BackoffCoefficient, MaxInterval: durationString(r.MaxInterval), NonRetryableErrors: r.NonRetryableErrors}
	}
	return b
}

func durationString(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// HTTPActivities lists every HTTP activity by name, header values
// redacted. It needs a token of scope admin.
func (c *Client) HTTPActivities(ctx context.Context) ([]HTTPActivity, error) {
	return getList(ctx, c, "/admin/activities", "activities", "activity", func(a *HTTPActivity, raw json.RawMessage) { a.Raw = raw })
}

// DeleteHTTPActivity deletes the HTTP activity name; an unknown name
// answers ErrNotFound. Attempts that start afterwards fail as
// activity_not_registered. It needs a token of scope admin.
func (c *Client) DeleteHTTPActivity(ctx context.Context, name string) error {
	if name == "" {
		return fmt.Errorf("activity name is empty: %w", ErrInvalid)
	}
	_, err := c.do(ctx, call{method: http.MethodDelete, path: "/admin/activities/" + seg(name), idempotent: true}, nil)
	return err
}

package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// AsyncAnswer is the node's answer to an async completion, failure or
// heartbeat.
type AsyncAnswer struct {
	ExecutionID string `json:"execution_id"`
	ActivityID  string `json:"activity_id"`
	Attempt     int    `json:"attempt"`
	// Duplicate: the attempt was answered the same way before; nothing
	// was appended.
	Duplicate bool `json:"duplicate"`
	// Retried: the failure made the retry policy's next attempt due.
	Retried bool `json:"retried"`
	// CancelRequested: the workflow cancelled the activity.
	CancelRequested bool `json:"cancel_requested"`
}

// ActivityFailure is the failure FailActivity records.
type ActivityFailure struct {
	Message      string          `json:"message"`
	Type         string          `json:"type,omitempty"`
	NonRetryable bool            `json:"non_retryable,omitempty"`
	Details      json.RawMessage `json:"details,omitempty"`
}

// CompleteActivity completes the attempt a task token names (an activity
// that answered "I will finish later") with output. The token is the
// credential; the client's bearer token is not needed. A repeat answers
// the same with Duplicate set, so it is retried; a stale attempt or a
// closed run answers ErrConflict or ErrTerminal, an unknown token
// ErrUnauthenticated.
func (c *Client) CompleteActivity(ctx context.Context, taskToken string, output any) (*AsyncAnswer, error) {
	return c.asyncCall(ctx, "complete", taskToken, map[string]any{"output": output})
}

// FailActivity fails the attempt a task token names; the activity's retry
// policy applies (Retried says a new attempt is due).
func (c *Client) FailActivity(ctx context.Context, taskToken string, f ActivityFailure) (*AsyncAnswer, error) {
	return c.asyncCall(ctx, "fail", taskToken, map[string]any{"error": f})
}

// HeartbeatActivity records progress of the attempt a task token names
// and pushes its heartbeat timeout back.
func (c *Client) HeartbeatActivity(ctx context.Context, taskToken string, details any) (*AsyncAnswer, error) {
	return c.asyncCall(ctx, "heartbeat", taskToken, map[string]any{"details": details})
}

func (c *Client) asyncCall(ctx context.Context, verb, taskToken string, body any) (*AsyncAnswer, error) {
	if taskToken == "" {
		return nil, fmt.Errorf("task token is empty: %w", ErrInvalid)
	}
	enc, err := encodeBody(body)
	if err != nil {
		return nil, err
	}
	var a AsyncAnswer
	// A repeat answers the same (duplicate): safe to retry.
	_, err = c.do(ctx, call{method: http.MethodPost, path: "/activities/" + verb, body: enc, taskToken: taskToken, idempotent: true}, &a)
	if err != nil {
		return nil, err
	}
	return &a, nil
}

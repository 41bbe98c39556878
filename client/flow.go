package client

import (
	"context"
	"net/http"
)

// FlowLimit is a workflow's concurrency limit as the shards apply it.
type FlowLimit struct {
	WorkflowName string `json:"workflow_name"`
	MaxRunning   int    `json:"max_running"`
	// KeyPointer is the JSON pointer into the input that keys the limit;
	// empty: one limit for the workflow name.
	KeyPointer string `json:"key_pointer,omitempty"`
	// Scope is "cluster" for a limit counted on every shard together;
	// empty: per shard.
	Scope string `json:"scope,omitempty"`
}

// FlowKey is one concurrency key in use on one shard: the runs holding a
// slot and the runs QUEUED for one.
type FlowKey struct {
	Shard        uint16 `json:"shard"`
	WorkflowName string `json:"workflow_name"`
	Key          string `json:"key"`
	Running      int64  `json:"running"`
	Queued       int64  `json:"queued"`
}

// ActivityFlowLimit is an activity's concurrency limit (MaxRunning 0:
// none) and rate limit (PerSecond 0: none).
type ActivityFlowLimit struct {
	ActivityName string `json:"activity_name"`
	MaxRunning   int    `json:"max_running"`
	// KeyPointer is the JSON pointer into the activity's input that keys
	// the limit; empty: one limit for the activity name.
	KeyPointer string `json:"key_pointer,omitempty"`
	// PerSecond attempts on average, up to Burst at once, per key of
	// RateKeyPointer (empty: one bucket for the activity name).
	PerSecond      float64 `json:"per_second,omitempty"`
	Burst          int     `json:"burst,omitempty"`
	RateKeyPointer string  `json:"rate_key_pointer,omitempty"`
}

// ActivityFlowKey is one activity concurrency key in use on one shard:
// the attempts holding a slot (from dispatch until their outcomes are
// recorded) and the tasks waiting.
type ActivityFlowKey struct {
	Shard        uint16 `json:"shard"`
	ActivityName string `json:"activity_name"`
	Key          string `json:"key"`
	Running      int64  `json:"running"`
	Waiting      int64  `json:"waiting"`
}

// FlowStatus is the cluster's flow control: the limits in force and the
// keys in use, of workflows and of activities. Status "partial" names
// the shards that could not be read.
type FlowStatus struct {
	Limits            []FlowLimit         `json:"limits"`
	Keys              []FlowKey           `json:"keys"`
	ActivityLimits    []ActivityFlowLimit `json:"activity_limits"`
	Activities        []ActivityFlowKey   `json:"activities"`
	Status            string              `json:"status,omitempty"`
	UnavailableShards []uint16            `json:"unavailable_shards,omitempty"`
}

// Flow reads the flow control: limits and, per shard, the concurrency
// keys in use (GET /flow).
func (c *Client) Flow(ctx context.Context) (*FlowStatus, error) {
	var st FlowStatus
	if _, err := c.do(ctx, call{method: http.MethodGet, path: "/flow"}, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

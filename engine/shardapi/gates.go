package shardapi

import "time"

// Gate scopes.
const (
	GateCluster      = "cluster"
	GateWorkflowName = "workflow_name"
	GateShard        = "shard"
)

// Gate is an admission gate: while it exists (and has not expired) fresh
// starts in its scope are refused. Replays, signals and running workflows
// are never gated.
type Gate struct {
	ID         string     `json:"gate_id"`
	ScopeKind  string     `json:"scope_kind"`
	ScopeValue string     `json:"scope_value"`
	Reason     string     `json:"reason"`
	CreatedAt  time.Time  `json:"created_at"`
	ExpiresAt  *time.Time `json:"expires_at,omitempty"`
}

// GateError refuses a fresh start blocked by a gate (HTTP 503).
type GateError struct {
	GateID string
	Reason string
}

func (e *GateError) Error() string { return "admission blocked" }

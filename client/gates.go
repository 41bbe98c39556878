package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// GateScope is what an admission gate covers.
type GateScope string

// Gate scopes.
const (
	// GateCluster covers every fresh start; it takes no value.
	GateCluster GateScope = "cluster"
	// GateWorkflowName covers the fresh starts of one workflow name.
	GateWorkflowName GateScope = "workflow_name"
	// GateShard covers the fresh starts placed on one shard (its id as
	// the value).
	GateShard GateScope = "shard"
)

// Gate is an admission gate: while it stands, fresh starts in its scope
// answer ErrGated; replays, signals and running workflows are never gated.
type Gate struct {
	ID         string    `json:"gate_id"`
	ScopeKind  GateScope `json:"scope_kind"`
	ScopeValue string    `json:"scope_value"`
	Reason     string    `json:"reason"`
	CreatedAt  time.Time `json:"created_at"`
	// ExpiresAt is nil for a gate that stands until it is opened.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// Raw is the gate's JSON object as the server sent it.
	Raw json.RawMessage `json:"-"`
}

// CloseGateRequest describes a gate to close.
type CloseGateRequest struct {
	// ID names the gate; empty lets the server mint one. Closing a gate
	// of an existing id replaces it.
	ID         string
	ScopeKind  GateScope
	ScopeValue string
	// Reason is required; it is kept with the gate and sent to refused
	// starts.
	Reason string
	// ExpiresAt, when not zero, lifts the gate by itself; it must be in
	// the future.
	ExpiresAt time.Time
}

type gateBody struct {
	GateID     string     `json:"gate_id,omitempty"`
	ScopeKind  GateScope  `json:"scope_kind"`
	ScopeValue string     `json:"scope_value,omitempty"`
	Reason     string     `json:"reason"`
	ExpiresAt  *time.Time `json:"expires_at,omitempty"`
}

// CloseGate closes an admission gate and returns it as stored. A node
// without admission gates answers ErrNotFound.
func (c *Client) CloseGate(ctx context.Context, req CloseGateRequest) (*Gate, error) {
	body := gateBody{GateID: req.ID, ScopeKind: req.ScopeKind, ScopeValue: req.ScopeValue, Reason: req.Reason}
	if !req.ExpiresAt.IsZero() {
		at := req.ExpiresAt.UTC()
		body.ExpiresAt = &at
	}
	enc, err := encodeBody(body)
	if err != nil {
		return nil, err
	}
	var g Gate
	// With its id, closing a gate again replaces it: safe to retry.
	rep, err := c.do(ctx, call{method: http.MethodPost, path: "/admin/gates", body: enc, idempotent: req.ID != ""}, &g)
	if err != nil {
		return nil, err
	}
	g.Raw = rep.body
	return &g, nil
}

// OpenGate lifts the gate id. An unknown id answers ErrNotFound.
func (c *Client) OpenGate(ctx context.Context, id string) error {
	if id == "" {
		return fmt.Errorf("gate id is empty: %w", ErrInvalid)
	}
	_, err := c.do(ctx, call{method: http.MethodDelete, path: "/admin/gates/" + seg(id)}, nil)
	return err
}

// Gates lists the standing admission gates (expired ones are left out),
// oldest first.
func (c *Client) Gates(ctx context.Context) ([]Gate, error) {
	return getList(ctx, c, "/admin/gates", "gates", "gate", func(g *Gate, raw json.RawMessage) { g.Raw = raw })
}

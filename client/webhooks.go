package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// Webhook providers and actions (CreateWebhookRequest).
const (
	WebhookStripe  = "stripe"
	WebhookGitHub  = "github"
	WebhookGeneric = "generic"

	WebhookStart           = "start"
	WebhookSignalWithStart = "signal_with_start"
)

// Webhook is a webhook receiver as the node shows it: its Secret is
// always "[redacted]".
type Webhook struct {
	Name              string `json:"name"`
	Provider          string `json:"provider"`
	Secret            string `json:"secret"`
	Action            string `json:"action"`
	Workflow          string `json:"workflow"`
	Signal            string `json:"signal,omitempty"`
	WorkflowIDPointer string `json:"workflow_id_pointer,omitempty"`
	KeyPointer        string `json:"key_pointer,omitempty"`
	SignatureHeader   string `json:"signature_header,omitempty"`
	// TimestampHeader is the header whose unix seconds a generic
	// receiver's signature covers; empty when it signs the body only.
	TimestampHeader string `json:"timestamp_header,omitempty"`
	// Tolerance is shown when the signature covers a timestamp.
	Tolerance string    `json:"tolerance,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	// Path is the receiver's URL path, to give the provider.
	Path string `json:"path"`
	// Raw is the receiver's JSON object as the server sent it.
	Raw json.RawMessage `json:"-"`
}

// CreateWebhookRequest describes a webhook receiver.
type CreateWebhookRequest struct {
	// Name, Provider (WebhookStripe, WebhookGitHub or WebhookGeneric),
	// Secret (the provider's signing secret), Action (WebhookStart or
	// WebhookSignalWithStart) and Workflow are required.
	Name     string `json:"name"`
	Provider string `json:"provider"`
	Secret   string `json:"secret"`
	Action   string `json:"action"`
	Workflow string `json:"workflow"`
	// Signal and WorkflowIDPointer (a JSON pointer into the payload) are
	// required by WebhookSignalWithStart; a start without a pointer gets a
	// minted workflow id.
	Signal            string `json:"signal,omitempty"`
	WorkflowIDPointer string `json:"workflow_id_pointer,omitempty"`
	// KeyPointer and SignatureHeader are the generic provider's.
	KeyPointer      string `json:"key_pointer,omitempty"`
	SignatureHeader string `json:"signature_header,omitempty"`
	// TimestampHeader (generic) names the header holding the delivery's
	// unix seconds, which the signature covers ("<t>.<body>"); empty is
	// "Webhook-Timestamp", the server's default.
	TimestampHeader string `json:"timestamp_header,omitempty"`
	// NoTimestamp (generic) makes the signature cover the body only, for
	// a sender that cannot sign a timestamp: a captured delivery can then
	// be replayed once the idempotency window has passed. It excludes
	// TimestampHeader.
	NoTimestamp bool `json:"no_timestamp,omitempty"`
	// Tolerance is how far a signed timestamp may be from now (Stripe, or
	// generic with a timestamp); zero is the default (5m).
	Tolerance time.Duration `json:"-"`
}

// CreateWebhook creates a receiver and returns it (its secret redacted).
// Creating the same receiver again changes nothing, so it is retried; a
// different one under the name answers ErrConflict. It needs a token of
// scope admin.
func (c *Client) CreateWebhook(ctx context.Context, req CreateWebhookRequest) (*Webhook, error) {
	if req.Tolerance < 0 {
		return nil, fmt.Errorf("webhook tolerance %s: must not be negative: %w", req.Tolerance, ErrInvalid)
	}
	if req.NoTimestamp && req.TimestampHeader != "" {
		return nil, fmt.Errorf("webhook %s: NoTimestamp and TimestampHeader exclude each other: %w", req.Name, ErrInvalid)
	}
	type body struct {
		CreateWebhookRequest
		Tolerance string `json:"tolerance,omitempty"`
	}
	b := body{CreateWebhookRequest: req}
	if req.Tolerance > 0 {
		b.Tolerance = req.Tolerance.String()
	}
	enc, err := encodeBody(b)
	if err != nil {
		return nil, err
	}
	return c.webhookCall(ctx, call{method: http.MethodPost, path: "/admin/webhooks", body: enc, idempotent: true})
}

// Webhooks lists every receiver by name, secrets redacted. It needs a
// token of scope admin.
func (c *Client) Webhooks(ctx context.Context) ([]Webhook, error) {
	return getList(ctx, c, "/admin/webhooks", "webhooks", "webhook", func(w *Webhook, raw json.RawMessage) { w.Raw = raw })
}

// DeleteWebhook deletes the receiver name; an unknown name answers
// ErrNotFound. It needs a token of scope admin.
func (c *Client) DeleteWebhook(ctx context.Context, name string) error {
	if name == "" {
		return fmt.Errorf("webhook name is empty: %w", ErrInvalid)
	}
	_, err := c.do(ctx, call{method: http.MethodDelete, path: "/admin/webhooks/" + seg(name), idempotent: true}, nil)
	return err
}

func (c *Client) webhookCall(ctx context.Context, cl call) (*Webhook, error) {
	var w Webhook
	rep, err := c.do(ctx, cl, &w)
	if err != nil {
		return nil, err
	}
	w.Raw = rep.body
	return &w, nil
}

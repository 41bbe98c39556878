package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// TokenScope is what a bearer token may do; each scope implies the ones
// below it: read < write < admin.
type TokenScope string

// Token scopes.
const (
	// ScopeRead: reads (runs, results, history, list, members, routing).
	ScopeRead TokenScope = "read"
	// ScopeWrite: start, signal, signal-with-start and cancel too.
	ScopeWrite TokenScope = "write"
	// ScopeAdmin: terminate, every /admin route (tokens included) and
	// starts whose policy terminates a running run too.
	ScopeAdmin TokenScope = "admin"
)

// Token states.
const (
	TokenActive  = "active"
	TokenExpired = "expired"
	TokenRevoked = "revoked"
)

// Token is a bearer token as the node shows it: never its secret, except
// in the answer to its creation.
type Token struct {
	// ID names the token in lists, logs and revocations.
	ID    string     `json:"id"`
	Name  string     `json:"name"`
	Scope TokenScope `json:"scope"`
	// State is TokenActive, TokenExpired or TokenRevoked.
	State     string    `json:"state"`
	CreatedAt time.Time `json:"created_at"`
	// ExpiresAt is nil for a token that never expires.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
	// Secret is the whole token ("hvt_<id>_<secret>"), the value for
	// WithToken. Only CreateToken returns it: the node keeps its hash and
	// never shows it again.
	Secret string `json:"token,omitempty"`
	// Raw is the token's JSON object as the server sent it.
	Raw json.RawMessage `json:"-"`
}

// CreateTokenRequest describes a token to mint.
type CreateTokenRequest struct {
	// Scope is required.
	Scope TokenScope
	// Name labels the token in lists (optional).
	Name string
	// ExpiresIn, when positive, makes the token stop verifying after that
	// long; zero never.
	ExpiresIn time.Duration
}

type tokenBody struct {
	Scope     TokenScope `json:"scope"`
	Name      string     `json:"name,omitempty"`
	ExpiresIn string     `json:"expires_in,omitempty"`
}

// CreateToken mints a token and returns it with its Secret. It needs a
// token of scope admin. A node with authentication off answers
// ErrNotFound.
//
// A creation is not idempotent: it is retried only when the connection
// could not be made, never once its request may have reached a node (not
// even after a 503, which a node forwarding to the raft leader also
// answers when the leader's answer is lost), so that a retry cannot mint
// a second token. After such a failure, list the tokens: the failed call
// may have made one, which nobody holds and which can be revoked.
func (c *Client) CreateToken(ctx context.Context, req CreateTokenRequest) (*Token, error) {
	if req.ExpiresIn < 0 {
		return nil, fmt.Errorf("token expires in %s: must not be negative: %w", req.ExpiresIn, ErrInvalid)
	}
	body := tokenBody{Scope: req.Scope, Name: req.Name}
	if req.ExpiresIn > 0 {
		body.ExpiresIn = req.ExpiresIn.String()
	}
	enc, err := encodeBody(body)
	if err != nil {
		return nil, err
	}
	return c.tokenCall(ctx, call{method: http.MethodPost, path: "/admin/tokens", body: enc, once: true})
}

// Tokens lists every token, expired and revoked ones included, oldest
// first. It needs a token of scope admin.
func (c *Client) Tokens(ctx context.Context) ([]Token, error) {
	return getList(ctx, c, "/admin/tokens", "tokens", "token", func(t *Token, raw json.RawMessage) { t.Raw = raw })
}

// RevokeToken revokes the token id and returns it; revoking a revoked
// token changes nothing and answers the same. An unknown id answers
// ErrNotFound. It needs a token of scope admin.
func (c *Client) RevokeToken(ctx context.Context, id string) (*Token, error) {
	if id == "" {
		return nil, fmt.Errorf("token id is empty: %w", ErrInvalid)
	}
	// Revoking again is a no-op: safe to retry.
	return c.tokenCall(ctx, call{method: http.MethodDelete, path: "/admin/tokens/" + seg(id), idempotent: true})
}

func (c *Client) tokenCall(ctx context.Context, cl call) (*Token, error) {
	var t Token
	rep, err := c.do(ctx, cl, &t)
	if err != nil {
		return nil, err
	}
	t.Raw = rep.body
	return &t, nil
}

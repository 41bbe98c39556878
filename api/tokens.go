package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/harvestd/harvest/auth"
)

// Verifier checks a client's Authorization header; *auth.Verifier is one.
type Verifier interface {
	Verify(header string) (auth.Identity, error)
}

// TokenAdmin manages the token table. In a raft cluster writes on a node
// that is not the leader return *LeaderError; the API forwards them.
type TokenAdmin interface {
	// CreateToken mints a token: the whole token (shown once) and its record.
	CreateToken(ctx context.Context, spec auth.Spec) (string, auth.Token, error)
	// Tokens lists every token, revoked and expired ones included.
	Tokens(ctx context.Context) ([]auth.Token, error)
	// RevokeToken revokes a token by id (again: no change) and returns it;
	// ErrUnknownToken when there is none.
	RevokeToken(ctx context.Context, id string) (auth.Token, error)
}

// ErrUnknownToken: no token with that id.
var ErrUnknownToken = errors.New("unknown token")

// maxTokenTTL bounds expires_in.
const maxTokenTTL = 10 * 365 * 24 * time.Hour

// TokenView is a token as the API shows it: never its secret or hash.
type TokenView struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	Scope     auth.Scope `json:"scope"`
	State     string     `json:"state"` // active, expired or revoked
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
	// Token is the whole token, in the answer to its creation only.
	Token string `json:"token,omitempty"`
}

func viewToken(t auth.Token, now time.Time) TokenView {
	v := TokenView{ID: t.ID, Name: t.Name, Scope: t.Scope, State: "active", CreatedAt: t.CreatedAt,
		ExpiresAt: t.ExpiresAt, RevokedAt: t.RevokedAt}
	switch {
	case t.RevokedAt != nil:
		v.State = "revoked"
	case !t.Live(now):
		v.State = "expired"
	}
	return v
}

func (s *Server) tokenRoutes(g *gin.RouterGroup) {
	s.handle(g, http.MethodGet, "/admin/tokens", needAdmin, s.listTokens)
	s.handle(g, http.MethodPost, "/admin/tokens", needAdmin, s.createToken)
	s.handle(g, http.MethodDelete, "/admin/tokens/:token", needAdmin, s.revokeToken)
}

// tokens is the token admin, or false after answering 404.
func (s *Server) tokens(c *gin.Context) (TokenAdmin, bool) {
	if s.cfg.Tokens == nil {
		abort(c, &apiError{status: http.StatusNotFound, code: codeNotFound,
			msg: "authentication is off on this node (harvestd --auth off): there are no tokens"})
		return nil, false
	}
	return s.cfg.Tokens, true
}

type tokenBody struct {
	Name      string          `json:"name"`
	Scope     string          `json:"scope"`
	ExpiresIn json.RawMessage `json:"expires_in"`
}

// createToken handles POST /admin/tokens.
func (s *Server) createToken(c *gin.Context) {
	ta, ok := s.tokens(c)
	if !ok {
		return
	}
	raw, err := s.readBody(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	spec, err := s.tokenSpec(raw)
	if err != nil {
		s.fail(c, err)
		return
	}
	setAuditTarget(c, tokenTarget("", spec.Name))
	s.leaderCall(c, raw, func() (int, any, error) {
		full, t, err := ta.CreateToken(c.Request.Context(), spec)
		if err == nil {
			setAuditTarget(c, tokenTarget(t.ID, spec.Name))
		}
		v := viewToken(t, s.now())
		v.Token = full
		return http.StatusCreated, v, err
	})
}

func (s *Server) tokenSpec(raw []byte) (auth.Spec, error) {
	var b tokenBody
	if err := decodeObject(raw, &b); err != nil {
		return auth.Spec{}, err
	}
	scope, err := auth.ParseScope(b.Scope)
	if err != nil {
		return auth.Spec{}, badRequest(codeInvalidArgument, "scope: "+err.Error())
	}
	if err := checkText("name", b.Name, maxNameLen, false); err != nil {
		return auth.Spec{}, err
	}
	spec := auth.Spec{Name: b.Name, Scope: scope}
	ttl, err := parseDuration("expires_in", b.ExpiresIn)
	if err != nil || ttl == nil {
		return spec, err
	}
	if *ttl <= 0 || *ttl > maxTokenTTL {
		return spec, badRequest(codeInvalidArgument, fmt.Sprintf("expires_in must be positive and at most %s", maxTokenTTL))
	}
	spec.ExpiresAt = s.now().Add(*ttl)
	return spec, nil
}

// listTokens handles GET /admin/tokens.
func (s *Server) listTokens(c *gin.Context) {
	ta, ok := s.tokens(c)
	if !ok {
		return
	}
	list, err := ta.Tokens(c.Request.Context())
	if err != nil {
		s.fail(c, err)
		return
	}
	out := make([]TokenView, 0, len(list))
	for _, t := range list {
		out = append(out, viewToken(t, s.now()))
	}
	c.JSON(http.StatusOK, gin.H{"tokens": out})
}

// revokeToken handles DELETE /admin/tokens/{token}; revoking again
// answers the same 200.
func (s *Server) revokeToken(c *gin.Context) {
	ta, ok := s.tokens(c)
	if !ok {
		return
	}
	id := c.Param("token")
	if err := checkText("token id", id, maxNameLen, true); err != nil {
		s.fail(c, err)
		return
	}
	s.leaderCall(c, nil, func() (int, any, error) {
		t, err := ta.RevokeToken(c.Request.Context(), id)
		return http.StatusOK, viewToken(t, s.now()), err
	})
}

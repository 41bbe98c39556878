package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/harvestd/harvest/engine"
)

// Gates stores admission gates where every node's starts see them.
type Gates interface {
	CloseGate(ctx context.Context, g engine.Gate) error
	OpenGate(ctx context.Context, id string) (bool, error)
	ListGates(ctx context.Context) ([]engine.Gate, error)
}

func (s *Server) gateRoutes(g *gin.RouterGroup) {
	s.handle(g, http.MethodGet, "/admin/gates", needAdmin, s.listGates)
	s.handle(g, http.MethodPost, "/admin/gates", needAdmin, s.closeGate)
	s.handle(g, http.MethodDelete, "/admin/gates/:gate", needAdmin, s.openGate)
}

type gateBody struct {
	GateID     string     `json:"gate_id"`
	ScopeKind  string     `json:"scope_kind"`
	ScopeValue string     `json:"scope_value"`
	Reason     string     `json:"reason"`
	ExpiresAt  *time.Time `json:"expires_at"`
}

func (s *Server) gates(c *gin.Context) (Gates, bool) {
	if s.cfg.Gates == nil {
		abort(c, &apiError{status: http.StatusNotFound, code: codeNotFound, msg: "this node has no admission gates"})
		return nil, false
	}
	return s.cfg.Gates, true
}

// closeGate handles POST /admin/gates: a gate blocks fresh starts in its
// scope (cluster, workflow_name or shard) until deleted or expired.
func (s *Server) closeGate(c *gin.Context) {
	gates, ok := s.gates(c)
	if !ok {
		return
	}
	raw, err := s.readBody(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	var b gateBody
	if err := decodeObject(raw, &b); err != nil {
		s.fail(c, err)
		return
	}
	if b.GateID == "" {
		b.GateID = "gate_" + randomHex(6)
	}
	for _, f := range []struct{ name, v string }{{"gate_id", b.GateID}, {"scope_value", b.ScopeValue}} {
		if err := checkText(f.name, f.v, maxNameLen, false); err != nil {
			s.fail(c, err)
			return
		}
	}
	if err := checkText("reason", b.Reason, maxIDLen, true); err != nil {
		s.fail(c, err)
		return
	}
	if b.ExpiresAt != nil && !b.ExpiresAt.After(time.Now()) {
		s.fail(c, badRequest(codeInvalidArgument, "expires_at must be in the future"))
		return
	}
	setAuditTarget(c, "gate="+b.GateID)
	g := engine.Gate{ID: b.GateID, ScopeKind: b.ScopeKind, ScopeValue: b.ScopeValue, Reason: b.Reason,
		CreatedAt: time.Now().UTC(), ExpiresAt: b.ExpiresAt}
	if err := gates.CloseGate(c.Request.Context(), g); err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, g)
}

func (s *Server) openGate(c *gin.Context) {
	gates, ok := s.gates(c)
	if !ok {
		return
	}
	if err := checkText("gate_id", c.Param("gate"), maxNameLen, true); err != nil {
		s.fail(c, err)
		return
	}
	lifted, err := gates.OpenGate(c.Request.Context(), c.Param("gate"))
	if err != nil {
		s.fail(c, err)
		return
	}
	if !lifted {
		abort(c, &apiError{status: http.StatusNotFound, code: codeNotFound, msg: "no such gate"})
		return
	}
	c.JSON(http.StatusOK, gin.H{"lifted": true, "gate_id": c.Param("gate")})
}

func (s *Server) listGates(c *gin.Context) {
	gates, ok := s.gates(c)
	if !ok {
		return
	}
	list, err := gates.ListGates(c.Request.Context())
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"gates": nonNil(list)})
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/harvestd/harvest/flowlimit"
)

// FlowLimits keeps the flow control limits set at run time. In a raft
// cluster writes on a node that is not the leader return *LeaderError;
// the API forwards them.
type FlowLimits interface {
	// SetLimit sets the limit of its kind and name, replacing any, and
	// returns it as stored; the same limit again changes nothing.
	SetLimit(ctx context.Context, l flowlimit.Limit) (flowlimit.Limit, error)
	// Limits lists every limit by kind, then name.
	Limits(ctx context.Context) ([]flowlimit.Limit, error)
	// DeleteLimit deletes a limit; flowlimit.ErrUnknown when none.
	DeleteLimit(ctx context.Context, kind flowlimit.Kind, name string) error
}

func (s *Server) flowLimitRoutes(g *gin.RouterGroup) {
	s.handle(g, http.MethodGet, "/admin/limits", needAdmin, s.listLimits)
	s.handle(g, http.MethodPut, "/admin/limits/:kind/:name", needAdmin, s.setLimit)
	s.handle(g, http.MethodDelete, "/admin/limits/:kind/:name", needAdmin, s.deleteLimit)
}

// flowLimits is the limit store, or false after answering 404.
func (s *Server) flowLimits(c *gin.Context) (FlowLimits, bool) {
	if s.cfg.FlowLimits == nil {
		abort(c, &apiError{status: http.StatusNotFound, code: codeNotFound,
			msg: "this node keeps no flow limits set at run time (they need the raft catalog or a node without gossip)"})
		return nil, false
	}
	return s.cfg.FlowLimits, true
}

// limitBody is the body of PUT /admin/limits/{kind}/{name}; the rate
// fields are an activity's.
type limitBody struct {
	MaxRunning     int     `json:"max_running"`
	KeyPointer     string  `json:"key_pointer"`
	Scope          string  `json:"scope"`
	PerSecond      float64 `json:"per_second"`
	Burst          int     `json:"burst"`
	RateKeyPointer string  `json:"rate_key_pointer"`
}

// LimitView is a limit as the API shows it.
type LimitView struct {
	Kind           flowlimit.Kind `json:"kind"`
	Name           string         `json:"name"`
	MaxRunning     int            `json:"max_running"`
	KeyPointer     string         `json:"key_pointer,omitempty"`
	Scope          string         `json:"scope,omitempty"`
	PerSecond      float64        `json:"per_second,omitempty"`
	Burst          int            `json:"burst,omitempty"`
	RateKeyPointer string         `json:"rate_key_pointer,omitempty"`
	UpdatedAt      time.Time      `json:"updated_at"`
}

func viewLimit(l flowlimit.Limit) LimitView {
	return LimitView{Kind: l.Kind, Name: l.Name, MaxRunning: l.MaxRunning, KeyPointer: l.KeyPointer, Scope: l.Scope,
		PerSecond: l.PerSecond, Burst: l.Burst, RateKeyPointer: l.RateKeyPointer, UpdatedAt: l.UpdatedAt}
}

// limitParams reads and checks the path's kind and name.
func limitParams(c *gin.Context) (flowlimit.Kind, string, error) {
	kind := flowlimit.Kind(c.Param("kind"))
	if !kind.Valid() {
		return "", "", badRequest(codeInvalidArgument, fmt.Sprintf("kind %q must be %q or %q", kind, flowlimit.Workflow, flowlimit.Activity))
	}
	name := c.Param("name")
	if err := checkText("name", name, flowlimit.MaxNameLen, true); err != nil {
		return "", "", err
	}
	return kind, name, nil
}

// setLimit handles PUT /admin/limits/{kind}/{name}.
func (s *Server) setLimit(c *gin.Context) {
	store, ok := s.flowLimits(c)
	if !ok {
		return
	}
	raw, err := s.readBody(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	l, err := limitFromRequest(c, raw)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.leaderCall(c, raw, func() (int, any, error) {
		stored, err := store.SetLimit(c.Request.Context(), l)
		return http.StatusOK, viewLimit(stored), limitError(err)
	})
}

// limitFromRequest is the limit the path and body describe, checked.
func limitFromRequest(c *gin.Context, raw []byte) (flowlimit.Limit, error) {
	kind, name, err := limitParams(c)
	if err != nil {
		return flowlimit.Limit{}, err
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		// decodeObject takes no body as {}: here that would lift the
		// declared limits on a forgotten body.
		return flowlimit.Limit{}, badRequest(codeInvalidArgument, "send the limit as a JSON object ({} lifts the declared limits)")
	}
	var b limitBody
	if err := decodeObject(raw, &b); err != nil {
		return flowlimit.Limit{}, err
	}
	l := flowlimit.Limit{Kind: kind, Name: name, MaxRunning: b.MaxRunning, KeyPointer: b.KeyPointer, Scope: b.Scope,
		PerSecond: b.PerSecond, Burst: b.Burst, RateKeyPointer: b.RateKeyPointer}
	return l, limitError(l.Validate())
}

// limitError maps the flowlimit sentinels to their answers.
func limitError(err error) error {
	switch {
	case errors.Is(err, flowlimit.ErrInvalid):
		return badRequest(codeInvalidArgument, err.Error())
	case errors.Is(err, flowlimit.ErrUnknown):
		return &apiError{status: http.StatusNotFound, code: codeNotFound, msg: err.Error()}
	}
	return err
}

// listLimits handles GET /admin/limits.
func (s *Server) listLimits(c *gin.Context) {
	store, ok := s.flowLimits(c)
	if !ok {
		return
	}
	list, err := store.Limits(c.Request.Context())
	if err != nil {
		s.fail(c, err)
		return
	}
	out := make([]LimitView, 0, len(list))
	for _, l := range list {
		out = append(out, viewLimit(l))
	}
	c.JSON(http.StatusOK, gin.H{"limits": out})
}

// deleteLimit handles DELETE /admin/limits/{kind}/{name}.
func (s *Server) deleteLimit(c *gin.Context) {
	store, ok := s.flowLimits(c)
	if !ok {
		return
	}
	kind, name, err := limitParams(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.leaderCall(c, nil, func() (int, any, error) {
		err := store.DeleteLimit(c.Request.Context(), kind, name)
		return http.StatusOK, gin.H{"kind": kind, "name": name, "deleted": true}, limitError(err)
	})
}

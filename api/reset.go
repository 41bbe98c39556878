package api

import (
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/harvestd/harvest/engine"
)

// resetBody is the body of POST /workflows/{id}/reset: the point (an
// event id, or "first" / "last_task"), the reason, and the idempotency
// key when no Idempotency-Key header is sent.
type resetBody struct {
	EventID        *int64  `json:"event_id"`
	Point          string  `json:"point"`
	Reason         string  `json:"reason"`
	IdempotencyKey *string `json:"idempotency_key"`
}

// reset handles POST /workflows/{execution_id}/reset: the chain's current
// run is replaced by a new run that replays the run's history up to the
// point, then the signals it received after it (engine.Engine.Reset).
// A retry with the same key answers the same new run.
func (s *Server) reset(c *gin.Context) {
	raw, err := s.readBody(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	id, shard := s.executionShard(c, raw)
	if shard == nil {
		return
	}
	req, err := resetRequest(c, id, raw)
	if err != nil {
		s.fail(c, err)
		return
	}
	res, err := shard.Reset(c.Request.Context(), req)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, resetAnswer(res, req.Reason))
}

// resetRequest reads a reset's body and key: one point (an event_id or a
// named point), a reason, and the key (the header's, else the body's,
// else a fresh one).
func resetRequest(c *gin.Context, id uuid.UUID, raw []byte) (engine.ResetRequest, error) {
	var b resetBody
	if err := decodeObject(raw, &b); err != nil {
		return engine.ResetRequest{}, err
	}
	req := engine.ResetRequest{ExecutionID: id, Point: b.Point, Reason: b.Reason}
	if err := checkResetPoint(b); err != nil {
		return req, err
	}
	if b.EventID != nil {
		req.EventID = *b.EventID
	}
	if err := checkText("reason", b.Reason, maxIDLen, false); err != nil {
		return req, err
	}
	key, present, err := idempotencyKey(c)
	switch {
	case err != nil:
		return req, err
	case present:
		req.IdempotencyKey = key
	case b.IdempotencyKey != nil:
		req.IdempotencyKey = *b.IdempotencyKey
		return req, checkKey(c, "idempotency_key", req.IdempotencyKey)
	default:
		req.IdempotencyKey = uuid.NewString()
	}
	return req, nil
}

// checkResetPoint wants exactly one of event_id and point, and a known
// point name.
func checkResetPoint(b resetBody) error {
	switch {
	case b.EventID != nil && b.Point != "":
		return badRequest(codeInvalidArgument, "send event_id or point, not both")
	case b.EventID == nil && b.Point == "":
		return badRequest(codeInvalidArgument, fmt.Sprintf("a reset needs a point: event_id, or point %q or %q", engine.ResetFirst, engine.ResetLastTask))
	case b.EventID != nil && *b.EventID < 0:
		return badRequest(codeInvalidArgument, "event_id must not be negative")
	case b.Point != "" && b.Point != engine.ResetFirst && b.Point != engine.ResetLastTask:
		return badRequest(codeInvalidArgument, fmt.Sprintf("point %q: want %q or %q", b.Point, engine.ResetFirst, engine.ResetLastTask))
	}
	return nil
}

// resetAnswer is a reset's JSON answer.
func resetAnswer(res engine.ResetResult, reason string) gin.H {
	return gin.H{"ok": true, "execution_id": res.ExecutionID.String(), "workflow_id": res.WorkflowID,
		"reset_from": res.ResetFrom.String(), "event_id": res.EventID, "replaced_execution_id": res.Replaced.String(),
		"terminated": res.Terminated, "newly_reset": res.Newly, "reason": reason}
}

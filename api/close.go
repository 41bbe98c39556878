package api

import (
	"net/http"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
)

type closeBody struct {
	Reason string `json:"reason"`
}

// cancel handles POST /workflows/{execution_id}/cancel.
func (s *Server) cancel(c *gin.Context) { s.close(c, false) }

// terminate handles POST /workflows/{execution_id}/terminate.
func (s *Server) terminate(c *gin.Context) { s.close(c, true) }

func (s *Server) close(c *gin.Context, terminate bool) {
	raw, err := s.readBody(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	id, shard := s.executionShard(c, raw)
	if shard == nil {
		return
	}
	var b closeBody
	if err := decodeObject(raw, &b); err != nil {
		s.fail(c, err)
		return
	}
	if err := checkText("reason", b.Reason, maxIDLen, false); err != nil {
		s.fail(c, err)
		return
	}
	if terminate {
		res, err := shard.Terminate(c.Request.Context(), id, b.Reason)
		if err != nil {
			s.fail(c, err)
			return
		}
		c.JSON(http.StatusAccepted, withCurrent(gin.H{"ok": true, "execution_id": id.String(), "state": res.State, "reason": b.Reason,
			"newly_terminated": res.Newly}, id, res.ExecutionID))
		return
	}
	// A cancel is answered once the request is recorded: the run is still
	// RUNNING; its code closes it (CANCELLED, unless it chooses otherwise).
	res, err := shard.Cancel(c.Request.Context(), id, b.Reason)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, withCurrent(gin.H{"ok": true, "execution_id": id.String(), "state": res.State, "reason": b.Reason,
		"cancel_requested": res.CancelRequested, "newly_cancelled": res.Newly}, id, res.ExecutionID))
}

// withCurrent adds current_execution_id to an answer about run asked when
// the request reached another run: the current run of asked's
// continue-as-new chain.
func withCurrent(h gin.H, asked, reached uuid.UUID) gin.H {
	if reached != asked && reached != uuid.Nil {
		h["current_execution_id"] = reached.String()
	}
	return h
}

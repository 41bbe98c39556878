package api

import (
	"net/http"

	"github.com/gin-gonic/gin"
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
	op, status, flag := shard.Cancel, http.StatusOK, "newly_cancelled"
	if terminate {
		op, status, flag = shard.Terminate, http.StatusAccepted, "newly_terminated"
	}
	res, err := op(c.Request.Context(), id, b.Reason)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(status, gin.H{"ok": true, "execution_id": id.String(), "state": res.State, "reason": b.Reason, flag: res.Newly})
}

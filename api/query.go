package api

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/gin-gonic/gin"
)

// queryRequest is the body of POST /workflows/{id}/query/{name}.
type queryRequest struct {
	Args json.RawMessage `json:"args"`
}

// query handles GET and POST /workflows/{execution_id}/query/{name}: the
// run's history is replayed through the workflow code and the handler it
// registered under name answers (POST: with {"args": …}).
func (s *Server) query(c *gin.Context) {
	id, t, err := s.executionTarget(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	name := c.Param("query")
	if err := checkText("query name", name, maxNameLen, true); err != nil {
		s.fail(c, err)
		return
	}
	var raw []byte
	if c.Request.Method == http.MethodPost {
		if raw, err = s.readBody(c); err != nil {
			s.fail(c, err)
			return
		}
	}
	shard := s.serveOrForward(c, t, raw)
	if shard == nil {
		return
	}
	var req queryRequest
	if len(bytes.TrimSpace(raw)) > 0 {
		if _, err := decodePayload(raw, "body"); err != nil {
			s.fail(c, err)
			return
		}
		if err := json.Unmarshal(raw, &req); err != nil {
			s.fail(c, badRequest(codeInvalidJSON, "body: "+err.Error()))
			return
		}
	}
	out, err := shard.Query(c.Request.Context(), id, name, req.Args)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"execution_id": id.String(), "query": name, "result": out})
}

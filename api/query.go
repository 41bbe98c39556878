package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/harvestd/harvest"
)

// queryRequest is the body of POST /workflows/{id}/query/{name}.
type queryRequest struct {
	Args json.RawMessage `json:"args"`
}

// checkQueryName checks a query's name: names with the reserved prefix
// are Harvest's own (an update's validator, harvest.UpdateQueryPrefix).
func checkQueryName(name string) error {
	if err := checkText("query name", name, maxNameLen, true); err != nil {
		return err
	}
	if strings.HasPrefix(name, harvest.ReservedPrefix) {
		return badRequest(codeInvalidArgument, fmt.Sprintf("query name %q: names starting with %q are reserved", name, harvest.ReservedPrefix))
	}
	return nil
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
	if err := checkQueryName(name); err != nil {
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

package api

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine"
)

// defaultUpdateWait is how long an update request waits for its answer
// when it names no wait (at most Config.ResultWaitMax).
const defaultUpdateWait = 10 * time.Second

// updateBody is the body of POST /workflows/{id}/update/{name}.
type updateBody struct {
	UpdateID *string         `json:"update_id"`
	Args     json.RawMessage `json:"args"`
}

// update handles POST /workflows/{execution_id}/update/{name}: the run's
// update handler is validated, sent the update (once per update id, in
// the run's chain) and waited for up to ?wait= (default 10 s): 200 with
// its answer, or 202 when it did not answer in time (ask again with its
// id).
func (s *Server) update(c *gin.Context) {
	id, t, err := s.executionTarget(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	req, err := s.updateRequest(c, id)
	if err != nil {
		s.fail(c, err)
		return
	}
	raw, err := s.readBody(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	shard := s.serveOrForward(c, t, raw)
	if shard == nil {
		return
	}
	if err := s.decodeUpdate(c, raw, &req); err != nil {
		s.fail(c, err)
		return
	}
	res, err := shard.Update(c.Request.Context(), req)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.answerUpdate(c, req, res, nil)
}

// updateRequest reads the update's name, its wait and the
// Idempotency-Key header (the update id, which wins over the body's).
func (s *Server) updateRequest(c *gin.Context, id uuid.UUID) (engine.UpdateRequest, error) {
	name := c.Param("update")
	if err := checkUpdateName(name); err != nil {
		return engine.UpdateRequest{}, err
	}
	req, err := s.updateHeader(c, id)
	req.Name = name
	return req, err
}

// updateHeader reads an update's wait and its Idempotency-Key header.
func (s *Server) updateHeader(c *gin.Context, id uuid.UUID) (engine.UpdateRequest, error) {
	wait := min(defaultUpdateWait, s.cfg.ResultWaitMax)
	if v := c.Query("wait"); v != "" {
		w, err := parseWait(v, s.cfg.ResultWaitMax)
		if err != nil {
			return engine.UpdateRequest{}, err
		}
		wait = w
	}
	key, _, err := idempotencyKey(c)
	return engine.UpdateRequest{ExecutionID: id, UpdateID: key, Wait: wait}, err
}

// decodeUpdate reads the body into req: its arguments, and its update id
// unless the header gave one; an update with neither gets a fresh id.
func (s *Server) decodeUpdate(c *gin.Context, raw []byte, req *engine.UpdateRequest) error {
	var body updateBody
	if err := decodeObject(raw, &body); err != nil {
		return err
	}
	req.Args = body.Args
	switch {
	case req.UpdateID != "":
	case body.UpdateID != nil:
		req.UpdateID = *body.UpdateID
		return checkKey(c, "update_id", req.UpdateID)
	default:
		req.UpdateID = uuid.NewString()
	}
	return nil
}

// checkUpdateName checks an update's name: names with the reserved
// prefix are Harvest's own.
func checkUpdateName(name string) error {
	if err := checkText("update name", name, maxNameLen, true); err != nil {
		return err
	}
	if strings.HasPrefix(name, harvest.ReservedPrefix) {
		return badRequest(codeInvalidArgument, fmt.Sprintf("update name %q: names starting with %q are reserved", name, harvest.ReservedPrefix))
	}
	return nil
}

// answerUpdate writes an update's answer, with the fields of more: 200
// with its result or its handler's error, 202 while it has none.
func (s *Server) answerUpdate(c *gin.Context, req engine.UpdateRequest, res engine.UpdateResult, more gin.H) {
	body := gin.H{"update_id": req.UpdateID, "update": req.Name, "execution_id": res.ExecutionID.String()}
	maps.Copy(body, more)
	switch {
	case !res.Completed:
		body["outcome"] = "accepted"
		c.JSON(http.StatusAccepted, body)
		return
	case res.Error != nil:
		body["outcome"], body["error"] = "failed", res.Error
	default:
		body["outcome"], body["result"] = "completed", res.Output
	}
	c.JSON(http.StatusOK, body)
}

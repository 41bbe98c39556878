package api

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine"
)

// Async completion: the holder of an attempt's task token (sent in the
// Harvest-Task-Token header, never in a URL) completes, fails or
// heartbeats the attempt. The token is the credential: these are
// capability routes, routed to the shard the token's execution is on.

func (s *Server) activityRoutes(g *gin.RouterGroup) {
	s.handle(g, http.MethodPost, "/activities/complete", capability, s.completeActivity)
	s.handle(g, http.MethodPost, "/activities/fail", capability, s.failActivity)
	s.handle(g, http.MethodPost, "/activities/heartbeat", capability, s.heartbeatActivity)
}

type completeBody struct {
	Output json.RawMessage `json:"output"`
}

type failBody struct {
	Error *harvest.ErrorInfo `json:"error"`
}

type heartbeatBody struct {
	Details json.RawMessage `json:"details"`
}

// tokenShard reads the task token and the body, and routes the request
// to the token's shard; a nil Shard means it was answered (refused or
// forwarded).
func (s *Server) tokenShard(c *gin.Context) (string, []byte, Shard) {
	token := c.GetHeader(harvest.TaskTokenHeader)
	id, err := engine.ParseTaskToken(token)
	if err != nil {
		abort(c, unauthenticated("this route needs the attempt's task token in the "+harvest.TaskTokenHeader+" header"))
		return "", nil, nil
	}
	raw, err := s.readBody(c)
	if err != nil {
		s.fail(c, err)
		return "", nil, nil
	}
	t, err := s.router.ForShard(engine.ShardOf(id))
	if err != nil {
		s.fail(c, err)
		return "", nil, nil
	}
	return token, raw, s.serveOrForward(c, t, raw)
}

// completeActivity handles POST /activities/complete {"output": any}.
func (s *Server) completeActivity(c *gin.Context) {
	token, raw, shard := s.tokenShard(c)
	if shard == nil {
		return
	}
	var b completeBody
	if err := decodeObject(raw, &b); err != nil {
		s.fail(c, err)
		return
	}
	ans, err := shard.CompleteActivity(c.Request.Context(), token, b.Output)
	s.answerAsync(c, ans, err)
}

// failActivity handles POST /activities/fail {"error": {"message", "type",
// "non_retryable", "details"}}; the retry policy applies.
func (s *Server) failActivity(c *gin.Context) {
	token, raw, shard := s.tokenShard(c)
	if shard == nil {
		return
	}
	var b failBody
	if err := decodeObject(raw, &b); err != nil {
		s.fail(c, err)
		return
	}
	if b.Error == nil || b.Error.Message == "" {
		s.fail(c, badRequest(codeInvalidArgument, "error.message must not be empty"))
		return
	}
	if err := checkTexts(textParam{"error.type", b.Error.Type, maxNameLen}); err != nil {
		s.fail(c, err)
		return
	}
	ans, err := shard.FailActivity(c.Request.Context(), token, *b.Error)
	s.answerAsync(c, ans, err)
}

// heartbeatActivity handles POST /activities/heartbeat {"details": any}.
func (s *Server) heartbeatActivity(c *gin.Context) {
	token, raw, shard := s.tokenShard(c)
	if shard == nil {
		return
	}
	var b heartbeatBody
	if err := decodeObject(raw, &b); err != nil {
		s.fail(c, err)
		return
	}
	ans, err := shard.HeartbeatActivity(c.Request.Context(), token, b.Details)
	s.answerAsync(c, ans, err)
}

func (s *Server) answerAsync(c *gin.Context, ans engine.AsyncAnswer, err error) {
	switch {
	case errors.Is(err, engine.ErrTaskToken):
		abort(c, unauthenticated("unknown task token"))
		return
	case errors.Is(err, engine.ErrStaleAttempt):
		abort(c, &apiError{status: http.StatusConflict, code: codeStaleAttempt, msg: err.Error()})
		return
	case errors.Is(err, engine.ErrAnswered):
		abort(c, &apiError{status: http.StatusConflict, code: codeConflict, msg: err.Error()})
		return
	case err != nil:
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"execution_id": ans.ExecutionID.String(), "activity_id": ans.ActivityID,
		"attempt": ans.Attempt, "duplicate": ans.Duplicate, "retried": ans.Retried, "cancel_requested": ans.CancelRequested})
}

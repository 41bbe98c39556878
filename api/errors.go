package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine"
	"github.com/harvestd/harvest/ring"
)

// Machine-readable error codes of the JSON error body.
const (
	codeInvalidJSON      = "invalid_json"
	codeInvalidArgument  = "invalid_argument"
	codeUnknownWorkflow  = "unknown_workflow"
	codeUnknownSignal    = "unknown_signal"
	codeInvalidPayload   = "invalid_payload"
	codeNotFound         = "not_found"
	codeNoRoute          = "no_route"
	codeMethod           = "method_not_allowed"
	codeConflict         = "conflict"
	codeTerminal         = "execution_terminal"
	codeForbidden        = "forbidden"
	codeUnauthenticated  = "unauthenticated"
	codeForgedHeader     = "forged_header"
	codeTooLarge         = "payload_too_large"
	codeBodyTimeout      = "request_timeout"
	codeUnavailable      = "unavailable"
	codeForwardFailed    = "forward_failed"
	codeInternal         = "internal"
	codeUnknownQuery     = "unknown_query"
	codeUnknownUpdate    = "unknown_update"
	codeUpdateRejected   = "update_rejected"
	codeQueryCommand     = "query_command"
	codeQueryTimeout     = "query_timeout"
	codeAdmissionBlocked = "admission_blocked"
	codeStaleAttempt     = "stale_attempt"
)

// apiError is a client-facing failure: status, code, message and extra
// fields merged into the body.
type apiError struct {
	status int
	code   string
	msg    string
	extra  gin.H
}

func (e *apiError) Error() string { return e.msg }

func badRequest(code, msg string) *apiError {
	return &apiError{status: http.StatusBadRequest, code: code, msg: msg}
}

// abort writes the one JSON error shape: {"error": msg, "code": code, …}.
func abort(c *gin.Context, e *apiError) {
	body := gin.H{"error": e.msg, "code": e.code}
	for k, v := range e.extra {
		body[k] = v
	}
	if e.status == http.StatusServiceUnavailable {
		c.Header("Retry-After", "1")
	}
	c.AbortWithStatusJSON(e.status, body)
}

// fail maps an error (engine or api) to its HTTP answer.
func (s *Server) fail(c *gin.Context, err error) {
	abort(c, s.classify(c, err))
}

func (s *Server) classify(c *gin.Context, err error) *apiError {
	var (
		ae       *apiError
		conflict *engine.ConflictError
		terminal *engine.TerminalError
		lost     *engine.OwnershipLostError
		input    *harvest.InputError
		unknown  *harvest.UnknownSignalError
		payload  *harvest.PayloadError
		callback *engine.CallbackError
		gate     *engine.GateError
		moved    *engine.MovedError
		notFound *engine.NotFoundError
	)
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &input):
		return &apiError{status: http.StatusUnprocessableEntity, code: "invalid_input", msg: input.Error(),
			extra: gin.H{"violations": input.Violations}}
	case errors.As(err, &unknown):
		return &apiError{status: http.StatusNotFound, code: codeUnknownSignal, msg: unknown.Error(),
			extra: gin.H{"signal_name": unknown.Signal, "declared_signals": unknown.Declared}}
	case errors.As(err, &payload):
		return &apiError{status: http.StatusUnprocessableEntity, code: codeInvalidPayload, msg: payload.Error(),
			extra: gin.H{"signal_name": payload.Signal}}
	case errors.As(err, &callback):
		return &apiError{status: http.StatusUnprocessableEntity, code: "callback_refused", msg: callback.Error(),
			extra: gin.H{"url": callback.URL}}
	case errors.As(err, &gate):
		return &apiError{status: http.StatusServiceUnavailable, code: codeAdmissionBlocked, msg: "admission blocked",
			extra: gin.H{"gate_id": gate.GateID, "reason": gate.Reason}}
	case errors.As(err, &conflict):
		return &apiError{status: http.StatusConflict, code: codeConflict, msg: conflict.Error(),
			extra: gin.H{"existing_execution_id": conflict.ExistingExecutionID, "existing_state": conflict.ExistingState}}
	case errors.As(err, &terminal):
		return &apiError{status: http.StatusConflict, code: codeTerminal, msg: terminal.Error(),
			extra: gin.H{"execution_id": terminal.ExecutionID, "state": terminal.State}}
	case errors.Is(err, harvest.ErrUnknownUpdate):
		return &apiError{status: http.StatusNotFound, code: codeUnknownUpdate, msg: err.Error()}
	case errors.Is(err, harvest.ErrUpdateArgs):
		return &apiError{status: http.StatusUnprocessableEntity, code: codeInvalidPayload, msg: err.Error()}
	case errors.Is(err, harvest.ErrUpdateRejected):
		return &apiError{status: http.StatusUnprocessableEntity, code: codeUpdateRejected, msg: err.Error()}
	case errors.Is(err, harvest.ErrUnknownQuery):
		return &apiError{status: http.StatusNotFound, code: codeUnknownQuery, msg: err.Error()}
	case errors.Is(err, harvest.ErrQueryCommand):
		return badRequest(codeQueryCommand, err.Error())
	case errors.Is(err, harvest.ErrQueryArgs):
		return badRequest(codeInvalidArgument, err.Error())
	case errors.Is(err, engine.ErrQueryTimeout):
		return &apiError{status: http.StatusRequestTimeout, code: codeQueryTimeout, msg: err.Error()}
	case errors.Is(err, engine.ErrWorkflowIDBusy):
		return &apiError{status: http.StatusConflict, code: codeConflict, msg: err.Error()}
	case errors.Is(err, engine.ErrInvalidArgument):
		return badRequest(codeInvalidArgument, err.Error())
	case errors.Is(err, engine.ErrUnknownWorkflow):
		return &apiError{status: http.StatusNotFound, code: codeUnknownWorkflow, msg: err.Error()}
	case errors.As(err, &notFound):
		return &apiError{status: http.StatusNotFound, code: codeNotFound, msg: notFound.Error()}
	case errors.Is(err, engine.ErrNotFound):
		return &apiError{status: http.StatusNotFound, code: codeNotFound, msg: "execution not found"}
	case errors.Is(err, engine.ErrTerminateNotAllowed):
		return &apiError{status: http.StatusForbidden, code: codeForbidden, msg: err.Error()}
	case errors.As(err, &moved):
		return &apiError{status: http.StatusServiceUnavailable, code: codeUnavailable,
			msg:   "this start was placed by a shard catalog older than the one that moved its key (" + moved.Error() + "): retry",
			extra: gin.H{"shard_id": moved.Shard, "placement_epoch": moved.Epoch}}
	case errors.As(err, &lost):
		return &apiError{status: http.StatusServiceUnavailable, code: codeUnavailable, msg: err.Error(),
			extra: gin.H{"owner": lost.Owner}}
	case errors.Is(err, ring.ErrNoWritableShard):
		return &apiError{status: http.StatusServiceUnavailable, code: codeUnavailable,
			msg: "no shard is open for new workflows: every shard is draining or read-only"}
	case errors.Is(err, engine.ErrNotRunning), errors.Is(err, engine.ErrUnavailable), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return &apiError{status: http.StatusServiceUnavailable, code: codeUnavailable, msg: err.Error()}
	}
	s.log.Error().Err(err).Str("method", c.Request.Method).Str("route", c.FullPath()).Msg("request failed")
	return &apiError{status: http.StatusInternalServerError, code: codeInternal, msg: "internal error"}
}

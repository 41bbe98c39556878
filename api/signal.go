package api

import (
	"encoding/json"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/harvestd/harvest/engine"
)

// signal handles POST /workflows/{execution_id}/signal/{signal_name}.
func (s *Server) signal(c *gin.Context) {
	id, t, err := s.executionTarget(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	name := c.Param("signal")
	if err := checkSignalName(c, "signal name", name); err != nil {
		s.fail(c, err)
		return
	}
	key, err := signalKey(c)
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
	payload, err := decodePayload(raw, "body")
	if err != nil {
		s.fail(c, err)
		return
	}
	res, err := shard.Signal(c.Request.Context(), engine.SignalRequest{ExecutionID: id, SignalName: name, Payload: payload, IdempotencyKey: key})
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusAccepted, withCurrent(gin.H{"ok": true, "execution_id": id.String(), "signal_delivered": res.Delivered},
		id, res.ExecutionID))
}

// signalKey: the Idempotency-Key header wins over ?idempotency_key=; a
// key that is sent must not be empty.
func signalKey(c *gin.Context) (string, error) {
	key, present, err := idempotencyKey(c)
	if present || err != nil {
		return key, err
	}
	vals, ok := c.Request.URL.Query()["idempotency_key"]
	if !ok {
		return "", nil
	}
	return vals[0], checkKey(c, "idempotency_key", vals[0])
}

type signalWithStartBody struct {
	WorkflowID     string          `json:"workflow_id"`
	SignalName     string          `json:"signal_name"`
	SignalPayload  json.RawMessage `json:"signal_payload"`
	Input          json.RawMessage `json:"input"`
	StartInput     json.RawMessage `json:"start_input"`
	Queue          string          `json:"queue"`
	Memo           json.RawMessage `json:"memo"`
	IDReusePolicy  string          `json:"id_reuse_policy"`
	IdempotencyKey *string         `json:"idempotency_key"`
	flowFields
}

// signalWithStart handles POST /workflows/{name}/signal-with-start.
func (s *Server) signalWithStart(c *gin.Context) {
	req, raw, err := s.signalWithStartRequest(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	run := func(t Target, pl *engine.Placement) { s.signalWithStartOn(c, t.Shard, pl, req) }
	s.routeStart(c, req.Start.WorkflowName, req.Start.WorkflowID, "", raw, run)
}

func (s *Server) signalWithStartOn(c *gin.Context, shard Shard, pl *engine.Placement, req engine.SignalWithStartRequest) {
	req.Start.Placement = pl
	res, err := shard.SignalWithStart(c.Request.Context(), req)
	if err != nil {
		s.fail(c, err)
		return
	}
	status := http.StatusOK
	if res.StartedFresh {
		status = http.StatusCreated
	}
	c.JSON(status, gin.H{
		"execution_id": res.ExecutionID.String(), "workflow_name": res.WorkflowName, "workflow_id": res.WorkflowID,
		"state": res.State, "started_fresh": res.StartedFresh, "signal_delivered": res.SignalDelivered,
	})
}

func (s *Server) signalWithStartRequest(c *gin.Context) (engine.SignalWithStartRequest, []byte, error) {
	name := c.Param("id")
	if err := checkWorkflowName(c, "workflow name", name); err != nil {
		return engine.SignalWithStartRequest{}, nil, err
	}
	key, hasHeader, err := idempotencyKey(c)
	if err != nil {
		return engine.SignalWithStartRequest{}, nil, err
	}
	raw, err := s.readBody(c)
	if err != nil {
		return engine.SignalWithStartRequest{}, nil, err
	}
	var b signalWithStartBody
	if err := decodeObject(raw, &b); err != nil {
		return engine.SignalWithStartRequest{}, nil, err
	}
	if !hasHeader && b.IdempotencyKey != nil {
		key = *b.IdempotencyKey
		if err := checkKey(c, "idempotency_key", key); err != nil {
			return engine.SignalWithStartRequest{}, nil, err
		}
	}
	for _, f := range []struct {
		name, v string
		max     int
	}{{"workflow_id", b.WorkflowID, maxIDLen}, {"signal_name", b.SignalName, maxNameLen}} {
		if err := checkText(f.name, f.v, f.max, true); err != nil {
			return engine.SignalWithStartRequest{}, nil, err
		}
	}
	if err := checkSignalName(c, "signal_name", b.SignalName); err != nil {
		return engine.SignalWithStartRequest{}, nil, err
	}
	if err := checkText("queue", b.Queue, maxNameLen, false); err != nil {
		return engine.SignalWithStartRequest{}, nil, err
	}
	if b.Input != nil && b.StartInput != nil {
		return engine.SignalWithStartRequest{}, nil, badRequest(codeInvalidArgument, "send input or start_input, not both")
	}
	reuse, err := engine.ParseReusePolicy(b.IDReusePolicy)
	if err != nil {
		return engine.SignalWithStartRequest{}, nil, err
	}
	input := b.Input
	if input == nil {
		input = b.StartInput
	}
	req := engine.SignalWithStartRequest{
		Start: engine.StartRequest{WorkflowName: name, WorkflowID: b.WorkflowID, Input: input, Queue: b.Queue,
			Memo: b.Memo, ReusePolicy: reuse, AllowTerminate: mayTerminate(c)},
		SignalName: b.SignalName, SignalPayload: b.SignalPayload, IdempotencyKey: key,
	}
	if err := b.apply(&req.Start); err != nil {
		return engine.SignalWithStartRequest{}, nil, err
	}
	return req, raw, nil
}

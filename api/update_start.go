package api

import (
	"encoding/json"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/harvestd/harvest/engine"
)

// updateWithStartBody is the body of POST
// /workflows/{name}/update-with-start: the run's workflow id and start
// fields (as a signal-with-start's), the update's name, id and arguments.
type updateWithStartBody struct {
	WorkflowID    string          `json:"workflow_id"`
	UpdateName    string          `json:"update_name"`
	UpdateID      *string         `json:"update_id"`
	Args          json.RawMessage `json:"args"`
	Input         json.RawMessage `json:"input"`
	Queue         string          `json:"queue"`
	Memo          json.RawMessage `json:"memo"`
	IDReusePolicy string          `json:"id_reuse_policy"`
	flowFields
}

// updateWithStart handles POST /workflows/{name}/update-with-start: the
// run holding the workflow id is started (or the running one attached
// to) under a key derived from the update id, then sent the update and
// waited for as POST /workflows/{id}/update/{name} is.
func (s *Server) updateWithStart(c *gin.Context) {
	req, raw, err := s.updateWithStartRequest(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	run := func(t Target, pl *engine.Placement) { s.updateWithStartOn(c, t.Shard, pl, req) }
	s.routeStart(c, req.Start.WorkflowName, req.Start.WorkflowID, "", raw, run)
}

func (s *Server) updateWithStartOn(c *gin.Context, shard Shard, pl *engine.Placement, req engine.UpdateWithStartRequest) {
	req.Start.Placement = pl
	res, err := shard.UpdateWithStart(c.Request.Context(), req)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.answerUpdate(c, req.Update, res.Update, gin.H{"workflow_id": res.Start.WorkflowID, "started_fresh": res.Start.StartedFresh})
}

// updateWithStartRequest reads and checks the request: the start's
// fields as a signal-with-start checks them, the update's as an update's.
func (s *Server) updateWithStartRequest(c *gin.Context) (engine.UpdateWithStartRequest, []byte, error) {
	name := c.Param("id")
	if err := checkWorkflowName(c, "workflow name", name); err != nil {
		return engine.UpdateWithStartRequest{}, nil, err
	}
	upd, err := s.updateHeader(c, uuid.Nil)
	if err != nil {
		return engine.UpdateWithStartRequest{}, nil, err
	}
	raw, err := s.readBody(c)
	if err != nil {
		return engine.UpdateWithStartRequest{}, nil, err
	}
	var b updateWithStartBody
	if err := decodeObject(raw, &b); err != nil {
		return engine.UpdateWithStartRequest{}, nil, err
	}
	start, err := b.start(name, mayTerminate(c))
	if err != nil {
		return engine.UpdateWithStartRequest{}, nil, err
	}
	if err := b.update(c, &upd); err != nil {
		return engine.UpdateWithStartRequest{}, nil, err
	}
	return engine.UpdateWithStartRequest{Start: start, Update: upd}, raw, nil
}

// start checks the body's start fields and makes the start of workflow
// name.
func (b *updateWithStartBody) start(name string, mayTerminate bool) (engine.StartRequest, error) {
	if err := checkTexts(textParam{"workflow_id", b.WorkflowID, maxIDLen}, textParam{"queue", b.Queue, maxNameLen}); err != nil {
		return engine.StartRequest{}, err
	}
	if b.WorkflowID == "" {
		return engine.StartRequest{}, badRequest(codeInvalidArgument, "workflow_id is required: it names the run to start or update")
	}
	reuse, err := engine.ParseReusePolicy(b.IDReusePolicy)
	if err != nil {
		return engine.StartRequest{}, err
	}
	req := engine.StartRequest{WorkflowName: name, WorkflowID: b.WorkflowID, Input: b.Input, Queue: b.Queue, Memo: b.Memo,
		ReusePolicy: reuse, AllowTerminate: mayTerminate}
	return req, b.apply(&req)
}

// update sets the body's update fields on req: its name, its arguments,
// and its id unless the header gave one (neither: a fresh id).
func (b *updateWithStartBody) update(c *gin.Context, req *engine.UpdateRequest) error {
	if err := checkUpdateName(b.UpdateName); err != nil {
		return err
	}
	req.Name, req.Args = b.UpdateName, b.Args
	switch {
	case req.UpdateID != "":
	case b.UpdateID != nil:
		req.UpdateID = *b.UpdateID
		return checkKey(c, "update_id", req.UpdateID)
	default:
		req.UpdateID = uuid.NewString()
	}
	return nil
}

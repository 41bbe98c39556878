package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// UpdateWithStartRequest is an update-with-start of a workflow: the run
// holding WorkflowID is sent the update, and started with Input first
// when no run holds it.
type UpdateWithStartRequest struct {
	WorkflowID string
	UpdateName string
	// UpdateID identifies the update, and through it the start: a retry
	// with the same id finds the same run and gets the first answer.
	UpdateID string
	Args     any
	Input    any
	Queue    string
	// ReusePolicy governs a closed run holding WorkflowID: the default
	// (allow_duplicate) starts a fresh run; a running run is updated,
	// unless the policy is terminate_if_running (replaced; needs admin).
	ReusePolicy ReusePolicy
	// Wait bounds the wait for the answer (0: the server's default, 10 s).
	Wait time.Duration
}

// UpdateWithStartResponse is an update's answer, with the run's workflow
// id and whether this request started it.
type UpdateWithStartResponse struct {
	UpdateResponse
	WorkflowID   string `json:"workflow_id"`
	StartedFresh bool   `json:"started_fresh"`
}

type updateWithStartBody struct {
	WorkflowID  string          `json:"workflow_id"`
	UpdateName  string          `json:"update_name"`
	Args        json.RawMessage `json:"args,omitempty"`
	Input       json.RawMessage `json:"input,omitempty"`
	Queue       string          `json:"queue,omitempty"`
	ReusePolicy ReusePolicy     `json:"id_reuse_policy,omitempty"`
}

// UpdateWithStart sends the update of req to the run of workflowName
// holding req.WorkflowID, starting that run first when none is running
// (POST /workflows/{name}/update-with-start). The answer is an
// update's (UpdateIdempotent); a refused update leaves the run started.
func (c *Client) UpdateWithStart(ctx context.Context, workflowName string, req UpdateWithStartRequest) (*UpdateWithStartResponse, error) {
	body, err := req.body()
	if err != nil {
		return nil, err
	}
	cl := call{method: http.MethodPost, path: "/workflows/" + seg(workflowName) + "/update-with-start", body: body,
		key: req.UpdateID, route: byKey(workflowName, req.WorkflowID, "")}
	if req.Wait > 0 {
		cl.query = url.Values{"wait": {req.Wait.String()}}
	}
	var res UpdateWithStartResponse
	rep, err := c.do(ctx, cl, &res)
	if err != nil {
		return nil, err
	}
	res.Raw = rep.body
	return &res, nil
}

// body checks req and encodes its body.
func (req UpdateWithStartRequest) body() ([]byte, error) {
	switch {
	case req.WorkflowID == "":
		return nil, fmt.Errorf("update-with-start: workflow id is empty: %w", ErrInvalid)
	case req.UpdateName == "":
		return nil, fmt.Errorf("update-with-start: update name is empty: %w", ErrInvalid)
	case req.UpdateID == "":
		return nil, fmt.Errorf("update %s: update id is empty: %w", req.UpdateName, ErrInvalid)
	}
	b := updateWithStartBody{WorkflowID: req.WorkflowID, UpdateName: req.UpdateName, Queue: req.Queue, ReusePolicy: req.ReusePolicy}
	var err error
	if b.Args, err = rawJSON("update args", req.Args); err != nil {
		return nil, err
	}
	if b.Input, err = rawJSON("input", req.Input); err != nil {
		return nil, err
	}
	return encodeBody(b)
}

package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/harvestd/harvest"
)

// UpdateResponse is the answer to an update: Outcome "completed" with its
// Result, "failed" with its handler's Error, or "accepted" (not answered
// within the wait).
type UpdateResponse struct {
	UpdateID    string             `json:"update_id"`
	Update      string             `json:"update"`
	ExecutionID string             `json:"execution_id"`
	Outcome     string             `json:"outcome"`
	Result      json.RawMessage    `json:"result,omitempty"`
	Error       *harvest.ErrorInfo `json:"error,omitempty"`
	// Raw is the response body.
	Raw []byte `json:"-"`
}

// UpdateIdempotent sends the update name with args to the run
// executionID (any run of its continue-as-new chain), under updateID:
// the run applies an update id once, and a repeat (or a retry of a lost
// answer) gets the first answer, also after the run continued as new or
// closed. It waits up to wait for the answer (0: the server's default,
// 10 s); an update not answered by then is an *UpdateResponse with
// Outcome "accepted". A refusal by the run's validator is an *Error with
// code update_rejected (nothing was recorded), an unknown name
// unknown_update. updateID must not be empty.
func (c *Client) UpdateIdempotent(ctx context.Context, executionID, name, updateID string, args any, wait time.Duration) (*UpdateResponse, error) {
	switch {
	case executionID == "":
		return nil, errEmptyID
	case name == "":
		return nil, fmt.Errorf("update name is empty: %w", ErrInvalid)
	case updateID == "":
		return nil, fmt.Errorf("update %s: update id is empty: %w", name, ErrInvalid)
	}
	raw, err := rawJSON("update args", args)
	if err != nil {
		return nil, err
	}
	body, err := encodeBody(struct {
		Args json.RawMessage `json:"args,omitempty"`
	}{raw})
	if err != nil {
		return nil, err
	}
	cl := call{method: http.MethodPost, path: "/workflows/" + seg(executionID) + "/update/" + seg(name), body: body,
		key: updateID, route: byExecution(executionID)}
	if wait > 0 {
		cl.query = url.Values{"wait": {wait.String()}}
	}
	var res UpdateResponse
	rep, err := c.do(ctx, cl, &res)
	if err != nil {
		return nil, err
	}
	res.Raw = rep.body
	return &res, nil
}

// UpdateHandle sends one typed update. Build it from the same
// harvest.Update definition the workflow handles, so that the name and
// the types cannot drift between caller and handler.
type UpdateHandle[In, Out any] struct {
	c    *Client
	name string
}

// UpdateOf returns the handle of u on c.
func UpdateOf[In, Out any](c *Client, u harvest.Update[In, Out]) UpdateHandle[In, Out] {
	return UpdateHandle[In, Out]{c: c, name: u.Name()}
}

// Name is the update's name.
func (h UpdateHandle[In, Out]) Name() string { return h.name }

// Do sends the update under updateID (Client.UpdateIdempotent) and
// decodes its result. A handler's error is an *UpdateFailedError; an
// update not answered within wait is ErrUpdatePending (ask again with the
// same id).
func (h UpdateHandle[In, Out]) Do(ctx context.Context, executionID, updateID string, in In, wait time.Duration) (Out, error) {
	var out Out
	raw, err := json.Marshal(in)
	if err != nil {
		return out, fmt.Errorf("encode update args: %w", err)
	}
	res, err := h.c.UpdateIdempotent(ctx, executionID, h.name, updateID, json.RawMessage(raw), wait)
	switch {
	case err != nil:
		return out, err
	case res.Outcome == "accepted":
		return out, fmt.Errorf("update %s %s: %w", h.name, updateID, ErrUpdatePending)
	case res.Error != nil:
		return out, &UpdateFailedError{UpdateID: updateID, Info: *res.Error}
	}
	if err := json.Unmarshal(res.Result, &out); err != nil {
		return out, fmt.Errorf("decode update result: %w", err)
	}
	return out, nil
}

// UpdateFailedError is an update whose handler returned an error.
type UpdateFailedError struct {
	UpdateID string
	Info     harvest.ErrorInfo
}

func (e *UpdateFailedError) Error() string {
	return fmt.Sprintf("update %s failed: %s", e.UpdateID, e.Info.Message)
}

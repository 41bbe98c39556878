package client

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/google/uuid"
)

// ResetOptions name a reset's point, one of EventID and Point ("first"
// or "last_task"), its reason, and its idempotency key (empty: the client
// makes one, so that its own retries reset once).
type ResetOptions struct {
	EventID        *int64
	Point          string
	Reason         string
	IdempotencyKey string
}

// ResetResponse is the new run of a reset.
type ResetResponse struct {
	OK          bool   `json:"ok"`
	ExecutionID string `json:"execution_id"`
	WorkflowID  string `json:"workflow_id"`
	// ResetFrom is the run whose history the new run replays, up to
	// EventID.
	ResetFrom string `json:"reset_from"`
	EventID   int64  `json:"event_id"`
	// ReplacedExecutionID is the chain's run the reset replaced;
	// Terminated says it was running and the reset terminated it.
	ReplacedExecutionID string `json:"replaced_execution_id"`
	Terminated          bool   `json:"terminated"`
	// NewlyReset is false when the key's first reset answered.
	NewlyReset bool   `json:"newly_reset"`
	Reason     string `json:"reason"`
	// Raw is the server's JSON body.
	Raw json.RawMessage `json:"-"`
}

type resetBody struct {
	EventID *int64 `json:"event_id,omitempty"`
	Point   string `json:"point,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// Reset replaces the current run of executionID's chain by a new run that
// replays executionID's history up to the point, then the signals it
// received after it, and runs on with the workers' current code. An
// activity re-executed after the point carries the idempotency key it
// had. A retry with the same key answers the same new run.
func (c *Client) Reset(ctx context.Context, executionID string, o ResetOptions) (*ResetResponse, error) {
	if executionID == "" {
		return nil, errEmptyID
	}
	enc, err := encodeBody(resetBody{EventID: o.EventID, Point: o.Point, Reason: o.Reason})
	if err != nil {
		return nil, err
	}
	key := o.IdempotencyKey
	if key == "" {
		key = uuid.NewString()
	}
	var res ResetResponse
	rep, err := c.do(ctx, call{method: http.MethodPost, path: "/workflows/" + seg(executionID) + "/reset", body: enc,
		key: key, route: byExecution(executionID)}, &res)
	if err != nil {
		return nil, err
	}
	res.Raw = rep.body
	return &res, nil
}

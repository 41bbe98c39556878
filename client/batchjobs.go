package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
)

// The batch operations (POST /batch).
const (
	BatchTerminate = "terminate"
	BatchCancel    = "cancel"
	BatchSignal    = "signal"
	BatchReset     = "reset"
)

// BatchJobRequest is a batch operation: Operation (BatchTerminate,
// BatchCancel, BatchSignal, which needs SignalName, or BatchReset, which
// needs ResetPoint: "first" or "last_task") on every run the
// filter matches, at most Rate a second (0: the server's default, 50).
type BatchJobRequest struct {
	Operation     string          `json:"operation"`
	Filter        BatchFilter     `json:"filter"`
	Reason        string          `json:"reason,omitempty"`
	SignalName    string          `json:"signal_name,omitempty"`
	SignalPayload json.RawMessage `json:"signal_payload,omitempty"`
	ResetPoint    string          `json:"reset_point,omitempty"`
	Rate          float64         `json:"rate,omitempty"`
	// IdempotencyKey identifies the job: a retry with it finds the same
	// job. Empty: the client makes one, so that its own retries do too.
	IdempotencyKey string `json:"-"`
}

// BatchFilter chooses a job's runs, as GET /workflows does; StartedBefore
// defaults to the job's creation.
type BatchFilter struct {
	WorkflowName     string     `json:"workflow_name"`
	WorkflowID       string     `json:"workflow_id,omitempty"`
	WorkflowIDPrefix string     `json:"workflow_id_prefix,omitempty"`
	States           []string   `json:"states,omitempty"`
	StartedAfter     *time.Time `json:"started_after,omitempty"`
	StartedBefore    *time.Time `json:"started_before,omitempty"`
}

// BatchCreated answers CreateBatchJob: the job's id, and whether this
// request created it.
type BatchCreated struct {
	BatchID        string `json:"batch_id"`
	IdempotencyKey string `json:"idempotency_key"`
	Created        bool   `json:"created"`
}

// BatchJob is a job's state (running, completed, stopped or failed) and
// progress.
type BatchJob struct {
	BatchID     string        `json:"batch_id"`
	State       string        `json:"state"`
	ExecutionID string        `json:"execution_id"`
	Operation   string        `json:"operation"`
	Filter      BatchFilter   `json:"filter"`
	Rate        float64       `json:"rate"`
	Reason      string        `json:"reason,omitempty"`
	SignalName  string        `json:"signal_name,omitempty"`
	ResetPoint  string        `json:"reset_point,omitempty"`
	Progress    BatchProgress `json:"progress"`
	CreatedAt   time.Time     `json:"created_at"`
	Raw         []byte        `json:"-"`
}

// BatchProgress counts a job's runs: Matched = Done + Skipped + Failed.
type BatchProgress struct {
	Matched   int64  `json:"matched"`
	Done      int64  `json:"done"`
	Skipped   int64  `json:"skipped"`
	Failed    int64  `json:"failed"`
	LastError string `json:"last_error,omitempty"`
	Pages     int64  `json:"pages"`
	Finished  bool   `json:"finished,omitempty"`
	Stopped   bool   `json:"stopped,omitempty"`
}

// CreateBatchJob creates the batch job of req (scope admin), or finds the
// one its key made.
func (c *Client) CreateBatchJob(ctx context.Context, req BatchJobRequest) (*BatchCreated, error) {
	if req.Operation == "" || req.Filter.WorkflowName == "" {
		return nil, fmt.Errorf("batch job: operation and filter workflow name are required: %w", ErrInvalid)
	}
	if req.IdempotencyKey == "" {
		req.IdempotencyKey = uuid.NewString()
	}
	body, err := encodeBody(req)
	if err != nil {
		return nil, err
	}
	var out BatchCreated
	_, err = c.do(ctx, call{method: http.MethodPost, path: "/batch", body: body, key: req.IdempotencyKey,
		route: byKey(batchWorkflow, "", req.IdempotencyKey)}, &out)
	return &out, err
}

// batchWorkflow is the system workflow a job runs as (its routing name).
const batchWorkflow = "hv.batch"

// BatchJob reads job id's state and progress.
func (c *Client) BatchJob(ctx context.Context, id string) (*BatchJob, error) {
	if id == "" {
		return nil, errEmptyID
	}
	var out BatchJob
	rep, err := c.do(ctx, call{method: http.MethodGet, path: "/batch/" + seg(id), route: byExecution(id)}, &out)
	if err != nil {
		return nil, err
	}
	out.Raw = rep.body
	return &out, nil
}

// CancelBatchJob stops job id after the page in flight (scope admin).
func (c *Client) CancelBatchJob(ctx context.Context, id string) error {
	if id == "" {
		return errEmptyID
	}
	_, err := c.do(ctx, call{method: http.MethodPost, path: "/batch/" + seg(id) + "/cancel", idempotent: true, route: byExecution(id)}, nil)
	return err
}

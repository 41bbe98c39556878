package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Execution is the stored state of a run.
type Execution struct {
	ExecutionID    string          `json:"execution_id"`
	WorkflowName   string          `json:"workflow_name"`
	WorkflowID     string          `json:"workflow_id"`
	State          string          `json:"state"`
	Queue          string          `json:"queue"`
	Input          json.RawMessage `json:"input,omitempty"`
	Output         json.RawMessage `json:"output,omitempty"`
	Error          json.RawMessage `json:"error,omitempty"`
	Memo           json.RawMessage `json:"memo,omitempty"`
	IdempotencyKey string          `json:"idempotency_key,omitempty"`
	// LastError is the last failure of a workflow task (non-determinism,
	// panic): the run is stuck until its code is fixed.
	LastError   string     `json:"last_error,omitempty"`
	TaskAttempt int        `json:"task_attempt,omitempty"`
	EventCount  int64      `json:"event_count"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
	CompletedAt *time.Time `json:"completed_at,omitempty"`
	// ChainID is the first run of the run's continue-as-new chain (the
	// run itself when it continues none); ContinuedFrom the run it
	// continues and ContinuedTo its successor, "" when there is none.
	ChainID       string `json:"chain_id,omitempty"`
	ContinuedFrom string `json:"continued_from,omitempty"`
	ContinuedTo   string `json:"continued_to,omitempty"`
}

// PendingActivity is an activity task not yet finished.
type PendingActivity struct {
	ActivityID       string          `json:"activity_id"`
	Name             string          `json:"name"`
	Status           string          `json:"status"`
	Attempt          int             `json:"attempt"`
	IdempotencyKey   string          `json:"idempotency_key"`
	ScheduledAt      time.Time       `json:"scheduled_at"`
	LastError        json.RawMessage `json:"last_error,omitempty"`
	HeartbeatDetails json.RawMessage `json:"heartbeat_details,omitempty"`
}

// PendingTimer is a timer not yet fired.
type PendingTimer struct {
	TimerID string    `json:"timer_id"`
	FireAt  time.Time `json:"fire_at"`
}

// Event is one history event.
type Event struct {
	EventID   int64           `json:"event_id"`
	Type      string          `json:"type"`
	Timestamp time.Time       `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

// Description is the answer of Describe.
type Description struct {
	Execution         Execution         `json:"execution"`
	PendingActivities []PendingActivity `json:"pending_activities"`
	PendingTimers     []PendingTimer    `json:"pending_timers"`
	// History is the first events (100 on the reference server).
	History          []Event `json:"history"`
	HistoryTruncated bool    `json:"history_truncated"`
	HistoryEndpoint  string  `json:"history_endpoint"`
	// Children are the child workflows the run started.
	Children []Child `json:"children"`
	// Raw is the server's JSON body.
	Raw json.RawMessage `json:"-"`
}

// Child is a child workflow a run started, as the run knows it: State is
// INITIATED (start not answered yet), START_FAILED, RUNNING (until the
// child's close reached the parent) or the child's close state.
type Child struct {
	CommandID         string    `json:"command_id"`
	WorkflowName      string    `json:"workflow_name"`
	WorkflowID        string    `json:"workflow_id"`
	ExecutionID       string    `json:"execution_id"`
	State             string    `json:"state"`
	ParentClosePolicy string    `json:"parent_close_policy"`
	StartError        string    `json:"start_error,omitempty"`
	InitiatedAt       time.Time `json:"initiated_at"`
}

// ChildList is the answer of Children.
type ChildList struct {
	ExecutionID string  `json:"execution_id"`
	Children    []Child `json:"children"`
	// Raw is the server's JSON body.
	Raw json.RawMessage `json:"-"`
}

// Children lists the child workflows of a run, in command order.
func (c *Client) Children(ctx context.Context, executionID string) (*ChildList, error) {
	if executionID == "" {
		return nil, errEmptyID
	}
	var out ChildList
	rep, err := c.do(ctx, call{method: http.MethodGet, path: "/workflows/" + seg(executionID) + "/children", route: byExecution(executionID)}, &out)
	if err != nil {
		return nil, err
	}
	out.Raw = rep.body
	return &out, nil
}

// Describe returns a run with its pending work and first history events.
func (c *Client) Describe(ctx context.Context, executionID string) (*Description, error) {
	if executionID == "" {
		return nil, errEmptyID
	}
	var d Description
	rep, err := c.do(ctx, call{method: http.MethodGet, path: "/workflows/" + seg(executionID), route: byExecution(executionID)}, &d)
	if err != nil {
		return nil, err
	}
	d.Raw = rep.body
	return &d, nil
}

// Result is the outcome of a closed run.
type Result struct {
	ExecutionID string          `json:"execution_id"`
	State       string          `json:"state"`
	Output      json.RawMessage `json:"output"`
	Error       json.RawMessage `json:"error"`
	CompletedAt *time.Time      `json:"completed_at"`
	// Raw is the server's JSON body.
	Raw json.RawMessage `json:"-"`
}

// Result long-polls up to wait (the server caps it, at 30 s by default) for
// the run to close. closed is false, with a nil Result, when the run was
// still running as the wait ended (HTTP 204). wait <= 0 asks without
// waiting.
func (c *Client) Result(ctx context.Context, executionID string, wait time.Duration) (*Result, bool, error) {
	if executionID == "" {
		return nil, false, errEmptyID
	}
	q := url.Values{"wait": {max(wait, 0).String()}}
	var r Result
	rep, err := c.do(ctx, call{method: http.MethodGet, path: "/workflows/" + seg(executionID) + "/result", query: q, route: byExecution(executionID)}, &r)
	if err != nil {
		return nil, false, err
	}
	if rep.status == http.StatusNoContent {
		return nil, false, nil
	}
	r.Raw = rep.body
	return &r, true, nil
}

// HistoryQuery selects a page of history.
type HistoryQuery struct {
	// After is the cursor: only events with a larger event_id. nil starts
	// at event 0.
	After *int64
	// Limit is the page size, 1–1000; 0 is the server's default (100).
	Limit int
	// EventTypes keeps only these event types; empty keeps all.
	EventTypes []string
}

// HistoryPage is one page of history.
type HistoryPage struct {
	Events []Event `json:"events"`
	// NextCursor is the After of the next page; nil on the last page.
	NextCursor  *int64 `json:"next_cursor"`
	TotalEvents int64  `json:"total_events"`
	LastEventID int64  `json:"last_event_id"`
	// Raw is the server's JSON body.
	Raw json.RawMessage `json:"-"`
}

// History returns a page of a run's events in event_id order.
func (c *Client) History(ctx context.Context, executionID string, hq HistoryQuery) (*HistoryPage, error) {
	if executionID == "" {
		return nil, errEmptyID
	}
	q := url.Values{}
	if hq.After != nil {
		q.Set("after", strconv.FormatInt(*hq.After, 10))
	}
	if hq.Limit > 0 {
		q.Set("limit", strconv.Itoa(hq.Limit))
	}
	for _, t := range hq.EventTypes {
		q.Add("event_type", t)
	}
	var p HistoryPage
	rep, err := c.do(ctx, call{method: http.MethodGet, path: "/workflows/" + seg(executionID) + "/history", query: q, route: byExecution(executionID)}, &p)
	if err != nil {
		return nil, err
	}
	p.Raw = rep.body
	return &p, nil
}

// Orders of List.
const (
	OrderAsc  = "asc"
	OrderDesc = "desc"
)

// ListQuery filters and pages List. Zero fields send no parameter.
type ListQuery struct {
	// States keeps runs in any of these states (RUNNING, COMPLETED, …).
	States       []string
	WorkflowName string
	WorkflowID   string
	// WorkflowIDPrefix keeps runs whose workflow id starts with it.
	WorkflowIDPrefix string
	// PageSize is 1–200; 0 is the server's default (50).
	PageSize int
	// Cursor is NextCursor of the previous page.
	Cursor string
	// Order is OrderAsc or OrderDesc; empty is the server's default,
	// newest first.
	Order string
	// StartedAfter and StartedBefore (zero: unbounded) keep runs created
	// in [StartedAfter, StartedBefore).
	StartedAfter, StartedBefore time.Time
	// Counts asks for ListPage.Counts.
	Counts bool
}

// ListPage is one page of runs.
type ListPage struct {
	Workflows []Execution `json:"workflows"`
	// NextCursor is the Cursor of the next page; empty on the last page.
	NextCursor string `json:"next_cursor"`
	// Counts (when asked) are the runs by state under the query's name, id
	// and started filters.
	Counts map[string]int64 `json:"counts,omitempty"`
	// Status is "partial" when UnavailableShards could not be read.
	Status            string   `json:"status,omitempty"`
	UnavailableShards []uint16 `json:"unavailable_shards,omitempty"`
	// Raw is the server's JSON body.
	Raw json.RawMessage `json:"-"`
}

// List returns a page of runs.
func (c *Client) List(ctx context.Context, lq ListQuery) (*ListPage, error) {
	q := url.Values{}
	for _, s := range lq.States {
		q.Add("state", s)
	}
	setNonEmpty(q, "workflow_name", lq.WorkflowName)
	setNonEmpty(q, "workflow_id", lq.WorkflowID)
	setNonEmpty(q, "workflow_id_prefix", lq.WorkflowIDPrefix)
	if lq.PageSize > 0 {
		q.Set("page_size", strconv.Itoa(lq.PageSize))
	}
	setNonEmpty(q, "cursor", lq.Cursor)
	setNonEmpty(q, "order", lq.Order)
	setTime(q, "started_after", lq.StartedAfter)
	setTime(q, "started_before", lq.StartedBefore)
	if lq.Counts {
		q.Set("counts", "true")
	}
	var p ListPage
	rep, err := c.do(ctx, call{method: http.MethodGet, path: "/workflows", query: q}, &p)
	if err != nil {
		return nil, err
	}
	p.Raw = rep.body
	return &p, nil
}

func setTime(q url.Values, key string, t time.Time) {
	if !t.IsZero() {
		q.Set(key, t.Format(time.RFC3339Nano))
	}
}

func setNonEmpty(q url.Values, key, value string) {
	if value != "" {
		q.Set(key, value)
	}
}

// Query asks the run's query handler name (registered by the workflow
// code with harvest.SetQueryHandler) and decodes its result into out (nil:
// discarded). args, encoded as JSON, are the handler's arguments (nil:
// none). The run may be running or closed. Errors: ErrNotFound (no such
// run), ErrUnknownQuery, ErrQueryCommand (the handler issued a workflow
// command), ErrQueryTimeout. A query changes nothing: it is retried like
// a read.
func (c *Client) Query(ctx context.Context, executionID, name string, args any, out any) error {
	if executionID == "" {
		return errEmptyID
	}
	cl := call{method: http.MethodGet, path: "/workflows/" + seg(executionID) + "/query/" + seg(name), idempotent: true, route: byExecution(executionID)}
	if args != nil {
		body, err := json.Marshal(struct {
			Args any `json:"args"`
		}{args})
		if err != nil {
			return fmt.Errorf("encode query args: %w", err)
		}
		cl.method, cl.body = http.MethodPost, body
	}
	var answer struct {
		Result json.RawMessage `json:"result"`
	}
	if _, err := c.do(ctx, cl, &answer); err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(answer.Result, out); err != nil {
		return fmt.Errorf("decode query result: %w", err)
	}
	return nil
}

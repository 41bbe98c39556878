package shardapi

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/harvestd/harvest"
)

// Limits of the read paths.
const (
	// DescribeHistoryLimit is how many events Describe includes.
	DescribeHistoryLimit = 100
	// HistoryPageDefault and HistoryPageMax bound History pages.
	HistoryPageDefault = 100
	HistoryPageMax     = 1000
	// HistoryPageBytesDefault bounds the event data (as JSON text) of one
	// History page and of Describe's events: a page stops before the
	// event that would cross it, but always holds at least one event.
	HistoryPageBytesDefault = 4 << 20
	// ListPageDefault and ListPageMax bound List pages.
	ListPageDefault = 50
	ListPageMax     = 200
)

// Execution is the stored state of a run.
type Execution struct {
	ExecutionID    uuid.UUID       `json:"execution_id"`
	WorkflowName   string          `json:"workflow_name"`
	WorkflowID     string          `json:"workflow_id"`
	State          string          `json:"state"`
	Queue          string          `json:"queue"`
	Input          json.RawMessage `json:"input,omitempty"`
	Output         json.RawMessage `json:"output,omitempty"`
	Error          json.RawMessage `json:"error,omitempty"`
	Memo           json.RawMessage `json:"memo,omitempty"`
	IdempotencyKey string          `json:"idempotency_key,omitempty"`
	// LastError is the last workflow task failure (non-determinism,
	// panic, unknown workflow): the run is stuck until the code is fixed.
	LastError   string     `json:"last_error,omitempty"`
	TaskAttempt int        `json:"task_attempt,omitempty"`
	EventCount  int64      `json:"event_count"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
	CompletedAt *time.Time `json:"completed_at,omitempty"`
	// ExecutionDeadline and RunDeadline are when a running run times out
	// (workflow time), if it has such a timeout.
	ExecutionDeadline *time.Time `json:"execution_deadline,omitempty"`
	RunDeadline       *time.Time `json:"run_deadline,omitempty"`
	// ChainID is the first run of the run's continue-as-new chain (the
	// run itself when it continues none); ContinuedFrom the run it
	// continues and ContinuedTo its successor, when there are.
	ChainID       uuid.UUID  `json:"chain_id"`
	ContinuedFrom *uuid.UUID `json:"continued_from,omitempty"`
	ContinuedTo   *uuid.UUID `json:"continued_to,omitempty"`
}

// PendingActivity is an activity task not yet finished.
type PendingActivity struct {
	ActivityID     string `json:"activity_id"`
	Name           string `json:"name"`
	Status         string `json:"status"`
	Attempt        int    `json:"attempt"`
	IdempotencyKey string `json:"idempotency_key"`
	// ScheduledAt is when the task is (or was) due, in workflow time: a
	// retry's is LastFailedAt plus the retry policy's backoff.
	ScheduledAt time.Time `json:"scheduled_at"`
	// LastFailedAt is when the last failed attempt was recorded (nil
	// before a failure), in workflow time.
	LastFailedAt *time.Time      `json:"last_failed_at,omitempty"`
	LastError    json.RawMessage `json:"last_error,omitempty"`
	Heartbeat    json.RawMessage `json:"heartbeat_details,omitempty"`
}

// PendingTimer is a timer not yet fired.
type PendingTimer struct {
	TimerID string    `json:"timer_id"`
	FireAt  time.Time `json:"fire_at"`
}

// Description is Describe's answer.
type Description struct {
	Execution         Execution         `json:"execution"`
	PendingActivities []PendingActivity `json:"pending_activities"`
	PendingTimers     []PendingTimer    `json:"pending_timers"`
	History           []harvest.Event   `json:"history"`
	HistoryTruncated  bool              `json:"history_truncated"`
	// CancelRequestedAt is when a cancel was requested (its
	// WorkflowCancelRequested event); nil when none was.
	CancelRequestedAt *time.Time `json:"cancel_requested_at,omitempty"`
	// Children are the child workflows the run started (engine/internal/read/children.go).
	Children []Child `json:"children"`
}

// Outcome is what a result poll answers: how a run ended, or that it has
// not yet (a state that is not terminal, everything else empty).
type Outcome struct {
	// ExecutionID is the run the outcome is of: the asked one, or the
	// last run of its continue-as-new chain that Result followed to.
	ExecutionID uuid.UUID
	State       string
	Output      json.RawMessage
	Error       json.RawMessage
	CompletedAt *time.Time
	// LastError is the last workflow task failure of a run still open.
	LastError string
	// ContinuedTo is the successor of a run that continued as new.
	ContinuedTo *uuid.UUID
}

// HistoryQuery selects a page of history.
type HistoryQuery struct {
	// After is the last event_id already seen (-1: from the start).
	After int64
	// Limit defaults to HistoryPageDefault, at most HistoryPageMax.
	Limit int
	// Types keeps only these event types (empty: all).
	Types []string
	// MaxBytes bounds the page's event data (as JSON text) below the
	// engine's HistoryPageBytes (0 or more: HistoryPageBytes); a page
	// still holds at least one event.
	MaxBytes int64
}

// HistoryPage is one page of history.
type HistoryPage struct {
	Events      []harvest.Event `json:"events"`
	NextCursor  *int64          `json:"next_cursor"`
	TotalEvents int64           `json:"total_events"`
	LastEventID int64           `json:"last_event_id"`
}

// ListQuery filters and pages List.
type ListQuery struct {
	States       []string
	WorkflowName string
	WorkflowID   string
	// WorkflowIDPrefix keeps the runs whose workflow id starts with it.
	WorkflowIDPrefix string
	PageSize         int
	// Cursor is NextCursor of the previous page.
	Cursor string
	// Ascending lists oldest first (default newest first).
	Ascending bool
	// StartedAfter and StartedBefore (zero: unbounded) keep runs created
	// in [StartedAfter, StartedBefore).
	StartedAfter, StartedBefore time.Time
	// Counts asks for the page's Counts.
	Counts bool
}

// ListPage is one page of runs.
type ListPage struct {
	Workflows  []Execution `json:"workflows"`
	NextCursor string      `json:"next_cursor,omitempty"`
	// Counts, when asked, counts the runs by state under the query's
	// other filters (its States and Cursor aside).
	Counts map[string]int64 `json:"counts,omitempty"`
}

// Child states as the parent knows them (Child.State): the start is not
// answered yet, it was refused, the child runs, or the child's reported
// close state (COMPLETED, FAILED, …).
const (
	ChildInitiated   = "INITIATED"
	ChildStartFailed = "START_FAILED"
)

// Child is one child workflow a run started (ChildWorkflowInitiated), as
// its parent knows it: State is RUNNING until the child's close has
// reached the parent.
type Child struct {
	CommandID         string     `json:"command_id"`
	WorkflowName      string     `json:"workflow_name"`
	WorkflowID        string     `json:"workflow_id"`
	ExecutionID       *uuid.UUID `json:"execution_id"`
	State             string     `json:"state"`
	ParentClosePolicy string     `json:"parent_close_policy"`
	StartError        string     `json:"start_error,omitempty"`
	InitiatedAt       time.Time  `json:"initiated_at"`
}

package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// Overlap policies of a schedule: what a fire does while the previous
// one's run is still running.
const (
	// OverlapSkip skips the fire (the default).
	OverlapSkip = "skip"
	// OverlapBufferOne keeps one fire waiting for the run to close.
	OverlapBufferOne = "buffer_one"
	// OverlapAllowAll starts every fire, each under its own workflow id.
	OverlapAllowAll = "allow_all"
)

// ScheduleRequest creates a schedule (docs/schedules.md): exactly one of
// Cron and Interval.
type ScheduleRequest struct {
	ID           string `json:"schedule_id"`
	WorkflowName string `json:"workflow_name"`
	// WorkflowID is the runs' workflow id; empty: the schedule id.
	WorkflowID string `json:"workflow_id,omitempty"`
	// Input is any JSON-encodable value (json.RawMessage is sent as is).
	Input any `json:"input,omitempty"`
	// Cron is a five-field cron expression, read in TimeZone (an IANA
	// name; empty: UTC).
	Cron     string `json:"cron,omitempty"`
	TimeZone string `json:"time_zone,omitempty"`
	// Interval fires at every k·Interval+Offset after the Unix epoch.
	Interval Duration `json:"interval,omitempty"`
	Offset   Duration `json:"offset,omitempty"`
	// Overlap is OverlapSkip (empty), OverlapBufferOne or OverlapAllowAll.
	Overlap string `json:"overlap,omitempty"`
	// CatchUpWindow is how late a missed fire still starts (empty: 1h).
	CatchUpWindow Duration `json:"catch_up_window,omitempty"`
	// Jitter delays each fire by a deterministic amount below it.
	Jitter Duration `json:"jitter,omitempty"`
	// EndAt, when set, is the last nominal time that fires.
	EndAt  *time.Time `json:"end_at,omitempty"`
	Paused bool       `json:"paused,omitempty"`
}

// Schedule is a schedule as the server describes it.
type Schedule struct {
	ID            string          `json:"schedule_id"`
	Generation    int64           `json:"generation"`
	WorkflowName  string          `json:"workflow_name"`
	WorkflowID    string          `json:"workflow_id"`
	Input         json.RawMessage `json:"input"`
	Cron          string          `json:"cron"`
	TimeZone      string          `json:"time_zone"`
	Interval      string          `json:"interval"`
	Offset        string          `json:"offset"`
	Overlap       string          `json:"overlap"`
	CatchUpWindow string          `json:"catch_up_window"`
	Jitter        string          `json:"jitter"`
	EndAt         *time.Time      `json:"end_at"`
	Paused        bool            `json:"paused"`
	// Cursor is the last nominal time fired (or passed).
	Cursor    time.Time   `json:"cursor"`
	NextFires []time.Time `json:"next_fires"`
	CreatedAt time.Time   `json:"created_at"`
	UpdatedAt time.Time   `json:"updated_at"`
	// RecentFires, newest first (describe only).
	RecentFires []ScheduleFire `json:"recent_fires"`
	// Raw is the schedule's JSON object as the server sent it.
	Raw json.RawMessage `json:"-"`
}

// ScheduleFire is one fire of a schedule.
type ScheduleFire struct {
	Key         string    `json:"key"`
	NominalTime time.Time `json:"nominal_time"`
	// Outcome is pending, started, skipped or failed; Reason says why.
	Outcome     string    `json:"outcome"`
	Reason      string    `json:"reason"`
	Triggered   bool      `json:"triggered"`
	WorkflowID  string    `json:"workflow_id"`
	ExecutionID string    `json:"execution_id"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// CreateSchedule creates a schedule (admin scope). An id in use answers
// ErrConflict.
func (c *Client) CreateSchedule(ctx context.Context, req ScheduleRequest) (*Schedule, error) {
	enc, err := encodeBody(req)
	if err != nil {
		return nil, err
	}
	return c.schedule(ctx, call{method: http.MethodPost, path: "/schedules", body: enc})
}

// Schedules lists the schedules, each with its next fire time.
func (c *Client) Schedules(ctx context.Context) ([]Schedule, error) {
	return getList(ctx, c, "/schedules", "schedules", "schedule", func(s *Schedule, raw json.RawMessage) { s.Raw = raw })
}

// DescribeSchedule reads a schedule with its next fire times and recent
// fires.
func (c *Client) DescribeSchedule(ctx context.Context, id string) (*Schedule, error) {
	return c.onSchedule(ctx, http.MethodGet, id, "")
}

// PauseSchedule pauses a schedule (admin scope).
func (c *Client) PauseSchedule(ctx context.Context, id string) (*Schedule, error) {
	return c.onSchedule(ctx, http.MethodPost, id, "/pause")
}

// ResumeSchedule resumes a paused schedule from now (admin scope).
func (c *Client) ResumeSchedule(ctx context.Context, id string) (*Schedule, error) {
	return c.onSchedule(ctx, http.MethodPost, id, "/resume")
}

// DeleteSchedule deletes a schedule (admin scope).
func (c *Client) DeleteSchedule(ctx context.Context, id string) error {
	if id == "" {
		return fmt.Errorf("schedule id is empty: %w", ErrInvalid)
	}
	_, err := c.do(ctx, call{method: http.MethodDelete, path: "/schedules/" + seg(id)}, nil)
	return err
}

// TriggerSchedule fires a schedule now (write scope) and returns the
// fire as recorded; its run starts soon after (see DescribeSchedule).
// Without a key each call is a fire of its own and is not retried; with
// TriggerScheduleKeyed it is retried safely.
func (c *Client) TriggerSchedule(ctx context.Context, id string) (*ScheduleFire, error) {
	fire, _, err := c.TriggerScheduleKeyed(ctx, id, "")
	return fire, err
}

// TriggerScheduleKeyed is TriggerSchedule with an idempotency key (sent
// as the Idempotency-Key header; "" for none): a repeat of a keyed
// trigger, by the client's retries or by the caller, answers the first
// one's fire (deduplicated true) and fires nothing more.
func (c *Client) TriggerScheduleKeyed(ctx context.Context, id, key string) (fire *ScheduleFire, deduplicated bool, err error) {
	if id == "" {
		return nil, false, fmt.Errorf("schedule id is empty: %w", ErrInvalid)
	}
	var out struct {
		Fire         ScheduleFire `json:"fire"`
		Deduplicated bool         `json:"deduplicated"`
	}
	if _, err := c.do(ctx, call{method: http.MethodPost, path: "/schedules/" + seg(id) + "/trigger", key: key}, &out); err != nil {
		return nil, false, err
	}
	return &out.Fire, out.Deduplicated, nil
}

func (c *Client) onSchedule(ctx context.Context, method, id, verb string) (*Schedule, error) {
	if id == "" {
		return nil, fmt.Errorf("schedule id is empty: %w", ErrInvalid)
	}
	// Reading, pausing and resuming twice is doing it once.
	return c.schedule(ctx, call{method: method, path: "/schedules/" + seg(id) + verb, idempotent: true})
}

func (c *Client) schedule(ctx context.Context, cl call) (*Schedule, error) {
	var s Schedule
	rep, err := c.do(ctx, cl, &s)
	if err != nil {
		return nil, err
	}
	s.Raw = rep.body
	return &s, nil
}

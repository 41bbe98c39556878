package shardapi

import (
	"encoding/json"
	"fmt"
	"regexp"
	"time"
)

// Overlap policies: what a fire does while the schedule's previous fire
// has not finished.
const (
	// OverlapSkip skips a fire while the previous run (or the previous
	// fire's start) is still in progress.
	OverlapSkip = "skip"
	// OverlapBufferOne keeps one fire waiting until the previous run
	// closes; fires while one waits are skipped.
	OverlapBufferOne = "buffer_one"
	// OverlapAllowAll starts every fire, each run under its own workflow id.
	OverlapAllowAll = "allow_all"
)

// CatchUpWindowDefault is how far back a fire missed while the
// schedule's shard was down is still started.
const CatchUpWindowDefault = time.Hour

// ScheduleSpec is what a schedule starts and when.
type ScheduleSpec struct {
	WorkflowName string `json:"workflow_name"`
	// WorkflowID is the runs' workflow id (default: the schedule id); an
	// allow_all schedule's runs add "-<nominal time>" to it.
	WorkflowID string          `json:"workflow_id,omitempty"`
	Input      json.RawMessage `json:"input,omitempty"`
	// Cron is a five-field cron expression read in TimeZone (default
	// UTC); or Interval (with Offset) fires at every k·Interval+Offset
	// after the Unix epoch.
	Cron          string        `json:"cron,omitempty"`
	TimeZone      string        `json:"time_zone,omitempty"`
	Interval      time.Duration `json:"interval,omitempty"`
	Offset        time.Duration `json:"offset,omitempty"`
	Overlap       string        `json:"overlap"`
	CatchUpWindow time.Duration `json:"catch_up_window"`
	Jitter        time.Duration `json:"jitter,omitempty"`
	// EndAt, when set, is the last nominal time the schedule may fire.
	EndAt *time.Time `json:"end_at,omitempty"`
}

// Schedule is a schedule as describe shows it.
type Schedule struct {
	ID         string       `json:"schedule_id"`
	Generation int64        `json:"generation"`
	Spec       ScheduleSpec `json:"spec"`
	Paused     bool         `json:"paused"`
	// Cursor is the last nominal time fired (or passed).
	Cursor    time.Time      `json:"cursor"`
	NextFires []time.Time    `json:"next_fires"`
	CreatedAt time.Time      `json:"created_at"`
	UpdatedAt time.Time      `json:"updated_at"`
	Fires     []ScheduleFire `json:"recent_fires,omitempty"`
}

// ScheduleFire is one recorded fire.
type ScheduleFire struct {
	Key         string    `json:"key"`
	NominalTime time.Time `json:"nominal_time"`
	// Outcome is "pending" (its start is being tried), "started",
	// "skipped" or "failed"; Reason says why for the last two, and the
	// last refusal of a pending one.
	Outcome     string    `json:"outcome"`
	Reason      string    `json:"reason,omitempty"`
	Triggered   bool      `json:"triggered,omitempty"`
	WorkflowID  string    `json:"workflow_id,omitempty"`
	ExecutionID string    `json:"execution_id,omitempty"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// scheduleIDPattern: ids go in keys, paths and run ids as they are.
var scheduleIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// ValidScheduleID reports whether id may name a schedule.
func ValidScheduleID(id string) error {
	if !scheduleIDPattern.MatchString(id) {
		return fmt.Errorf("schedule id %q: want 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit: %w",
			id, ErrInvalidArgument)
	}
	return nil
}

// ScheduleDef is a schedule's definition as a catalog holds it.
type ScheduleDef struct {
	ID         string
	Spec       json.RawMessage // a ScheduleSpec; nil when Deleted
	Paused     bool
	Generation int64
	Deleted    bool
	// Revision is the catalog's version of the definition (the raft index
	// of its last change): a copy never goes back to an older one. Zero:
	// unversioned (copied as it is).
	Revision uint64
}

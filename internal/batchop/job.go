package batchop

import (
	"encoding/json"
	"time"

	"github.com/harvestd/harvest/engine/shardapi"
)

// Names of the batch workflow, its activities, query and signal.
const (
	// WorkflowName is the batch job's workflow: reserved, a system workflow.
	WorkflowName = "hv.batch"
	// ListActivity lists a page of the runs the filter matches.
	ListActivity = "hv.batch.list"
	// ApplyActivity performs the operation on a page's runs.
	ApplyActivity = "hv.batch.apply"
	// ProgressQuery answers the job's Progress.
	ProgressQuery = "progress"
	// StopSignal stops the job after the page in flight.
	StopSignal = "hv:batch_stop"
	// KeyPrefix starts the key of a job's signal items (ItemKey).
	KeyPrefix = "hv:batch:"
	// RunPages is how many pages one run of a job performs before it
	// continues as new, carrying its cursor and progress.
	RunPages = 20
	// MaxPage bounds a page: a job's page is its rate (one second's
	// worth), at least 1 and at most MaxPage runs (the list's largest page).
	MaxPage = shardapi.ListPageMax
)

// Operation is what a job does to each run.
type Operation string

// The operations.
const (
	Terminate Operation = "terminate"
	Cancel    Operation = "cancel"
	Signal    Operation = "signal"
	// Reset resets each run to the job's ResetPoint (a named point:
	// "first" or "last_task"), keyed by ItemKey.
	Reset Operation = "reset"
)

// Valid reports whether o is an operation.
func (o Operation) Valid() bool { return o == Terminate || o == Cancel || o == Signal || o == Reset }

// Filter is the list filter of a job: the list API's (GET /workflows).
type Filter struct {
	WorkflowName string `json:"workflow_name"`
	WorkflowID   string `json:"workflow_id,omitempty"`
	// WorkflowIDPrefix keeps the runs whose workflow id starts with it.
	WorkflowIDPrefix string     `json:"workflow_id_prefix,omitempty"`
	States           []string   `json:"states,omitempty"`
	StartedAfter     *time.Time `json:"started_after,omitempty"`
	StartedBefore    *time.Time `json:"started_before,omitempty"`
}

// Job is a batch job's input: what it does, how fast, and (carried by a
// continue-as-new) where it is.
type Job struct {
	Operation     Operation       `json:"operation"`
	Filter        Filter          `json:"filter"`
	Reason        string          `json:"reason,omitempty"`
	SignalName    string          `json:"signal_name,omitempty"`
	SignalPayload json.RawMessage `json:"signal_payload,omitempty"`
	// ResetPoint is a reset job's point: "first" or "last_task".
	ResetPoint string `json:"reset_point,omitempty"`
	// Rate is the operations per second the job keeps under.
	Rate float64 `json:"rate"`
	// JobID is the job's id: the first run of its chain (set by that run).
	JobID string `json:"job_id,omitempty"`
	// Cursor is the list cursor after the last page performed.
	Cursor   string   `json:"cursor,omitempty"`
	Progress Progress `json:"progress"`
	// Pages is how many pages a run performs before it continues as new
	// (RunPages when 0), and Size the runs of a page (pageSize of the
	// rate when 0).
	Pages int `json:"pages,omitempty"`
	Size  int `json:"size,omitempty"`
}

// Progress is a job's counts: runs matched (listed), done (the operation
// took effect, or had: a terminated run, a cancel or a signal already
// recorded), skipped (closed before the job reached it: nothing to
// terminate, cancel, signal or reset) and failed (refused for good; LastError
// says why). Matched is the sum of the other three. Finished is true once
// every page was performed, Stopped once the job was stopped.
type Progress struct {
	Matched   int64  `json:"matched"`
	Done      int64  `json:"done"`
	Skipped   int64  `json:"skipped"`
	Failed    int64  `json:"failed"`
	LastError string `json:"last_error,omitempty"`
	Pages     int64  `json:"pages"`
	Finished  bool   `json:"finished,omitempty"`
	Stopped   bool   `json:"stopped,omitempty"`
}

// add adds a performed page's counts.
func (p *Progress) add(c Counts) {
	p.Matched += c.Done + c.Skipped + c.Failed
	p.Done, p.Skipped, p.Failed = p.Done+c.Done, p.Skipped+c.Skipped, p.Failed+c.Failed
	if c.LastError != "" {
		p.LastError = c.LastError
	}
	p.Pages++
}

// pageSize is the runs per page at rate: one second's worth, in [1, MaxPage].
func pageSize(rate float64) int {
	return int(max(1, min(rate, MaxPage)))
}

// ItemKey is the idempotency key of job's signal to run, or of its reset.
func ItemKey(job, run string) string { return KeyPrefix + job + ":" + run }

package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine"
	"github.com/harvestd/harvest/internal/batchop"
)

// Batch operations (internal/batchop): a job is a run of the system
// workflow batchop.WorkflowName, started under the job's idempotency key,
// so these routes are a start, a read and a keyed signal of that run.

// Batch job limits and defaults.
const (
	batchRateDefault = 50
	batchRateMax     = 10000
)

// batchStates are the states a job's filter may name.
var batchStates = []string{engine.StateQueued, engine.StateRunning, engine.StateCompleted, engine.StateFailed,
	engine.StateCancelled, engine.StateTimedOut, engine.StateTerminated, engine.StateContinuedAsNew}

// batchJobBody is the body of POST /batch.
type batchJobBody struct {
	Operation      string          `json:"operation"`
	Filter         batchJobFilter  `json:"filter"`
	Reason         string          `json:"reason"`
	SignalName     string          `json:"signal_name"`
	SignalPayload  json.RawMessage `json:"signal_payload"`
	ResetPoint     string          `json:"reset_point"`
	Rate           *float64        `json:"rate"`
	IdempotencyKey *string         `json:"idempotency_key"`
}

type batchJobFilter struct {
	WorkflowName     string     `json:"workflow_name"`
	WorkflowID       string     `json:"workflow_id"`
	WorkflowIDPrefix string     `json:"workflow_id_prefix"`
	States           []string   `json:"states"`
	StartedAfter     *time.Time `json:"started_after"`
	StartedBefore    *time.Time `json:"started_before"`
}

// createBatch handles POST /batch: the job's run is started under its
// key (the Idempotency-Key header, else the body's; neither: a fresh
// one), placed by that key like any keyed start.
func (s *Server) createBatch(c *gin.Context) {
	key, hasHeader, err := idempotencyKey(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	raw, err := s.readBody(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	job, key, err := batchJob(c, raw, key, hasHeader)
	if err != nil {
		s.fail(c, err)
		return
	}
	input, err := json.Marshal(job)
	if err != nil {
		s.fail(c, fmt.Errorf("encode batch job: %w", err))
		return
	}
	req := engine.StartRequest{WorkflowName: batchop.WorkflowName, IdempotencyKey: key, Input: input}
	run := func(t Target, pl *engine.Placement) {
		req.Placement = pl
		res, err := t.Shard.StartWorkflow(c.Request.Context(), req)
		if err != nil {
			s.fail(c, err)
			return
		}
		c.JSON(startStatus(res.StartedFresh), gin.H{"batch_id": res.ExecutionID.String(), "idempotency_key": key,
			"created": res.StartedFresh})
	}
	s.routeStart(c, batchop.WorkflowName, "", key, raw, run)
}

func startStatus(fresh bool) int {
	if fresh {
		return http.StatusCreated
	}
	return http.StatusOK
}

// batchJob reads and checks a job's body.
func batchJob(c *gin.Context, raw []byte, key string, hasHeader bool) (batchop.Job, string, error) {
	var b batchJobBody
	if err := decodeObject(raw, &b); err != nil {
		return batchop.Job{}, "", err
	}
	if !hasHeader && b.IdempotencyKey != nil {
		key = *b.IdempotencyKey
		if err := checkKey(c, "idempotency_key", key); err != nil {
			return batchop.Job{}, "", err
		}
	}
	if key == "" {
		key = uuid.NewString()
	}
	job := batchop.Job{Operation: batchop.Operation(b.Operation), Reason: b.Reason, SignalName: b.SignalName,
		SignalPayload: b.SignalPayload, ResetPoint: b.ResetPoint, Rate: batchRateDefault}
	if err := b.check(c, &job); err != nil {
		return batchop.Job{}, "", err
	}
	f, err := b.Filter.check()
	job.Filter = f
	if err == nil && job.Operation == batchop.Reset && f.StartedBefore.After(time.Now()) {
		// A reset's new run starts now: a later end would let the job
		// reset the runs it made, page after page.
		now := time.Now().UTC()
		job.Filter.StartedBefore = &now
	}
	return job, key, err
}

// check checks the body's operation, reason, signal and rate into job.
func (b *batchJobBody) check(c *gin.Context, job *batchop.Job) error {
	if !job.Operation.Valid() {
		return badRequest(codeInvalidArgument, fmt.Sprintf("operation %q: one of terminate, cancel, signal, reset", b.Operation))
	}
	if err := b.checkResetPoint(job.Operation); err != nil {
		return err
	}
	if err := checkText("reason", b.Reason, maxIDLen, false); err != nil {
		return err
	}
	if err := b.checkSignal(c, job.Operation); err != nil {
		return err
	}
	if b.Rate != nil {
		if !(*b.Rate > 0 && *b.Rate <= batchRateMax) {
			return badRequest(codeInvalidArgument, fmt.Sprintf("rate must be more than 0 and at most %d operations a second", batchRateMax))
		}
		job.Rate = *b.Rate
	}
	return nil
}

// checkResetPoint checks that a reset job names its point (a named one:
// the runs' histories differ), and that no other job does.
func (b *batchJobBody) checkResetPoint(op batchop.Operation) error {
	switch {
	case op != batchop.Reset && b.ResetPoint != "":
		return badRequest(codeInvalidArgument, "reset_point is for the reset operation")
	case op == batchop.Reset && b.ResetPoint != engine.ResetFirst && b.ResetPoint != engine.ResetLastTask:
		return badRequest(codeInvalidArgument, fmt.Sprintf("reset_point %q: want %q or %q", b.ResetPoint, engine.ResetFirst, engine.ResetLastTask))
	}
	return nil
}

// checkSignal checks that a signal job names its signal, and that no
// other job does.
func (b *batchJobBody) checkSignal(c *gin.Context, op batchop.Operation) error {
	if op != batchop.Signal {
		if b.SignalName != "" || b.SignalPayload != nil {
			return badRequest(codeInvalidArgument, "signal_name and signal_payload are for the signal operation")
		}
		return nil
	}
	if err := checkText("signal_name", b.SignalName, maxNameLen, true); err != nil {
		return err
	}
	return checkSignalName(c, "signal_name", b.SignalName)
}

// check checks a job's filter: a workflow name (not a system one), known
// states, and a time range, whose end is now when it is not given (the
// runs started after the job are not its).
func (f batchJobFilter) check() (batchop.Filter, error) {
	if err := checkText("filter.workflow_name", f.WorkflowName, maxNameLen, true); err != nil {
		return batchop.Filter{}, err
	}
	if harvest.IsSystemWorkflow(f.WorkflowName) {
		return batchop.Filter{}, badRequest(codeInvalidArgument, fmt.Sprintf("filter.workflow_name %q: Harvest's own runs are not batch items", f.WorkflowName))
	}
	if err := checkTexts(textParam{"filter.workflow_id", f.WorkflowID, maxIDLen},
		textParam{"filter.workflow_id_prefix", f.WorkflowIDPrefix, maxIDLen}); err != nil {
		return batchop.Filter{}, err
	}
	out := batchop.Filter{WorkflowName: f.WorkflowName, WorkflowID: f.WorkflowID, WorkflowIDPrefix: f.WorkflowIDPrefix, StartedAfter: f.StartedAfter, StartedBefore: f.StartedBefore}
	for _, st := range f.States {
		if up := strings.ToUpper(st); slices.Contains(batchStates, up) {
			out.States = append(out.States, up)
			continue
		}
		return batchop.Filter{}, badRequest(codeInvalidArgument, fmt.Sprintf("filter.states: %q is not a state", st))
	}
	if out.StartedBefore == nil {
		now := time.Now().UTC()
		out.StartedBefore = &now
	}
	return out, nil
}

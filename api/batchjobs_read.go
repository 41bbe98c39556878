package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/harvestd/harvest/engine"
	"github.com/harvestd/harvest/internal/batchop"
)

// batchAnswer is GET /batch/{id}'s answer: the job, where its chain is
// (its current run) and its progress.
type batchAnswer struct {
	BatchID     string           `json:"batch_id"`
	State       string           `json:"state"`
	ExecutionID string           `json:"execution_id"`
	Operation   string           `json:"operation"`
	Filter      batchop.Filter   `json:"filter"`
	Rate        float64          `json:"rate"`
	Reason      string           `json:"reason,omitempty"`
	SignalName  string           `json:"signal_name,omitempty"`
	ResetPoint  string           `json:"reset_point,omitempty"`
	Progress    batchop.Progress `json:"progress"`
	CreatedAt   time.Time        `json:"created_at"`
}

// describeBatch handles GET /batch/{id}: the job's state (running,
// completed, stopped or failed) and progress, read from its chain's
// current run (its query while it runs, its result once it closed).
func (s *Server) describeBatch(c *gin.Context) {
	id, shard := s.executionShard(c, nil)
	if shard == nil {
		return
	}
	first, cur, err := batchRuns(c.Request.Context(), shard, id)
	if err != nil {
		s.fail(c, err)
		return
	}
	out, err := batchJobOf(c.Request.Context(), shard, first, cur)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, out)
}

// stopBatch handles POST /batch/{id}/cancel: the job's current run gets
// the stop signal (keyed: a repeat is a duplicate), and stops after the
// page in flight.
func (s *Server) stopBatch(c *gin.Context) {
	id, shard := s.executionShard(c, nil)
	if shard == nil {
		return
	}
	_, cur, err := batchRuns(c.Request.Context(), shard, id)
	if err != nil {
		s.fail(c, err)
		return
	}
	if !engine.IsTerminal(cur.State) {
		_, err = shard.Signal(c.Request.Context(), engine.SignalRequest{ExecutionID: cur.ExecutionID, SignalName: batchop.StopSignal,
			Payload: json.RawMessage(`"stop"`), IdempotencyKey: batchop.StopSignal + ":" + id.String()})
	}
	var terminal *engine.TerminalError
	if err != nil && !errors.As(err, &terminal) {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusAccepted, gin.H{"batch_id": id.String(), "stop_requested": true})
}

// batchRuns reads job id's first run and its chain's current run; an id
// that is no batch job is not found.
func batchRuns(ctx context.Context, shard Shard, id uuid.UUID) (engine.Execution, engine.Execution, error) {
	d, err := shard.Describe(ctx, id)
	if err != nil {
		return engine.Execution{}, engine.Execution{}, err
	}
	first := d.Execution
	if first.WorkflowName != batchop.WorkflowName || first.ChainID != first.ExecutionID {
		return engine.Execution{}, engine.Execution{}, &engine.NotFoundError{What: "batch job", ID: id.String()}
	}
	cur := first
	for cur.ContinuedTo != nil {
		d, err := shard.Describe(ctx, *cur.ContinuedTo)
		if err != nil {
			return engine.Execution{}, engine.Execution{}, err
		}
		cur = d.Execution
	}
	return first, cur, nil
}

// batchJobOf is the answer for a job: its first run's input says what it
// does, its current run where it is.
func batchJobOf(ctx context.Context, shard Shard, first, cur engine.Execution) (batchAnswer, error) {
	var job batchop.Job
	if err := json.Unmarshal(first.Input, &job); err != nil {
		return batchAnswer{}, fmt.Errorf("decode batch job %s: %w", first.ExecutionID, err)
	}
	out := batchAnswer{BatchID: first.ExecutionID.String(), ExecutionID: cur.ExecutionID.String(), Operation: string(job.Operation),
		Filter: job.Filter, Rate: job.Rate, Reason: job.Reason, SignalName: job.SignalName, ResetPoint: job.ResetPoint, CreatedAt: first.CreatedAt}
	var err error
	out.State, out.Progress, err = batchProgress(ctx, shard, cur)
	return out, err
}

// batchProgress is the state and progress of a job's current run.
func batchProgress(ctx context.Context, shard Shard, cur engine.Execution) (string, batchop.Progress, error) {
	var p batchop.Progress
	switch cur.State {
	case engine.StateRunning, engine.StateQueued:
		raw, err := shard.Query(ctx, cur.ExecutionID, batchop.ProgressQuery, nil)
		if err != nil {
			return "", p, err
		}
		return "running", p, json.Unmarshal(raw, &p)
	case engine.StateCompleted:
		if err := json.Unmarshal(cur.Output, &p); err != nil {
			return "", p, fmt.Errorf("decode batch progress of %s: %w", cur.ExecutionID, err)
		}
		if p.Stopped {
			return "stopped", p, nil
		}
		return "completed", p, nil
	}
	return "failed", p, nil
}

package engine

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/harvestd/harvest/engine/shardapi"
)

// outboxScheduleStart is a schedule's fire (schedule_loop.go): a keyed
// start (ScheduleFireKey) of the schedule's workflow. Its row belongs to
// no run (execution id zero, command id the fire's key); its answer is
// recorded in the fire's harvest_schedule_fires row. The overlap policy
// decides what a refusal means: under skip, a workflow id still held by
// the previous run, or an admission gate, skips the fire for good; under
// buffer_one and allow_all the start is retried until the slot is free
// and the gate open.
const outboxScheduleStart = "schedule_start"

// scheduleStartRequest is the request of an outboxScheduleStart row.
type scheduleStartRequest struct {
	ScheduleID   string          `json:"schedule_id"`
	Generation   int64           `json:"generation"`
	Nominal      time.Time       `json:"nominal_time"`
	WorkflowName string          `json:"workflow_name"`
	WorkflowID   string          `json:"workflow_id"`
	Input        json.RawMessage `json:"input,omitempty"`
	Overlap      string          `json:"overlap"`
}

// scheduleStart is the start a fire fires. A closed run of the workflow
// id gives way to a fresh one (this reuse policy starts fresh after any
// close); a running one refuses the start under the fail conflict
// policy, it is never terminated.
func scheduleStart(d scheduleStartRequest) shardapi.OutboundStart {
	return shardapi.OutboundStart{WorkflowName: d.WorkflowName, WorkflowID: d.WorkflowID, Input: d.Input,
		ReusePolicy: ReuseTerminateIfRunning, ConflictPolicy: ConflictFail}
}

// refusedFire is the final outcome of a fire's refused start under its
// overlap policy (final false when it is to be retried): a gate or a held
// workflow id end a fire only under skip (under allow_all the id is the
// fire's own, so another run holding it fails the fire); any other
// definite refusal fails it.
func refusedFire(d scheduleStartRequest, err error) (outcome, reason string, final bool) {
	policy := d.Overlap
	var (
		gate     *GateError
		conflict *ConflictError
	)
	switch {
	case errors.As(err, &gate):
		if policy == OverlapSkip {
			return fireSkipped, "gated: admission gate " + gate.GateID + ": " + gate.Reason, true
		}
		return "", "", false
	case errors.As(err, &conflict) && policy == OverlapBufferOne:
		return "", "", false
	case errors.As(err, &conflict) && policy == OverlapSkip:
		return fireSkipped, "overlap (skip): run " + conflict.ExistingExecutionID + " is still running", true
	case IsDefinite(err):
		return fireFailed, err.Error(), true
	}
	return "", "", false
}

package schedule

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
	"github.com/jackc/pgx/v5"
)

// OutboxKind is a schedule's fire (loop.go): a keyed
// start (FireKey) of the schedule's workflow. Its row belongs to
// no run (execution id zero, command id the fire's key); its answer is
// recorded in the fire's harvest_schedule_fires row. The overlap policy
// decides what a refusal means: under skip, a workflow id still held by
// the previous run, or an admission gate, skips the fire for good; under
// buffer_one and allow_all the start is retried until the slot is free
// and the gate open.
const OutboxKind = "schedule_start"

// FireRequest is the request of an OutboxKind row.
type FireRequest struct {
	ScheduleID   string          `json:"schedule_id"`
	Generation   int64           `json:"generation"`
	Nominal      time.Time       `json:"nominal_time"`
	WorkflowName string          `json:"workflow_name"`
	WorkflowID   string          `json:"workflow_id"`
	Input        json.RawMessage `json:"input,omitempty"`
	Overlap      string          `json:"overlap"`
}

// FireStart is the start a fire fires. A closed run of the workflow
// id gives way to a fresh one (this reuse policy starts fresh after any
// close); a running one refuses the start under the fail conflict
// policy, it is never terminated.
func FireStart(d FireRequest) shardapi.OutboundStart {
	return shardapi.OutboundStart{WorkflowName: d.WorkflowName, WorkflowID: d.WorkflowID, Input: d.Input,
		ReusePolicy: shardapi.ReuseTerminateIfRunning, ConflictPolicy: shardapi.ConflictFail}
}

// Refused is the final outcome of a fire's refused start under its
// overlap policy (final false when it is to be retried): a gate or a held
// workflow id end a fire only under skip (under allow_all the id is the
// fire's own, so another run holding it fails the fire); any other
// definite refusal fails it.
func Refused(d FireRequest, err error) (outcome, reason string, final bool) {
	policy := d.Overlap
	var (
		gate     *shardapi.GateError
		conflict *shardapi.ConflictError
	)
	switch {
	case errors.As(err, &gate):
		if policy == shardapi.OverlapSkip {
			return FireSkipped, "gated: admission gate " + gate.GateID + ": " + gate.Reason, true
		}
		return "", "", false
	case errors.As(err, &conflict) && policy == shardapi.OverlapBufferOne:
		return "", "", false
	case errors.As(err, &conflict) && policy == shardapi.OverlapSkip:
		return FireSkipped, "overlap (skip): run " + conflict.ExistingExecutionID + " is still running", true
	case shardapi.IsDefinite(err):
		return FireFailed, err.Error(), true
	}
	return "", "", false
}

// QueueOutcome queues the record of a fire's answer in its fires row, by
// the fire's key (the row is gone if the schedule was deleted meanwhile:
// then nothing is recorded).
func QueueOutcome(b *pgx.Batch, key, outcome, reason, executionID string) {
	store.QueueFireOutcome(b, key, outcome, reason, executionID)
}

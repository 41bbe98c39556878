package deferred

import (
	"errors"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
)

// OutboxKind is a deferred item's fire (loop.go): a keyed start
// (shardapi.DeferredKey) of the item's workflow. Its row belongs to no run
// (execution id zero, command id the key); its answer is recorded in the
// item. An admission gate holds the start back (it is retried until
// the gate opens); any other definite refusal (an input the workflow's
// schema refuses among them) fails the item.
// Its request is a store.DeferredFire.
const OutboxKind = "deferred_start"

// FireStart is the start an item fires (a JSON null input is none).
func FireStart(d store.DeferredFire) shardapi.OutboundStart {
	input := d.Input
	if string(input) == "null" {
		input = nil
	}
	return shardapi.OutboundStart{WorkflowName: d.WorkflowName, WorkflowID: d.WorkflowID, Input: input}
}

// Refused is the final outcome of an item's refused start (final false
// when it is to be retried): a schema's refusal, or any definite
// refusal but a gate's, fails the item.
func Refused(_ store.DeferredFire, err error) (outcome, reason string, final bool) {
	var (
		gate   *shardapi.GateError
		schema *harvest.InputError
	)
	if errors.As(err, &schema) || !errors.As(err, &gate) && shardapi.IsDefinite(err) {
		return shardapi.DeferredFailed, err.Error(), true
	}
	return "", "", false
}

// QueueOutcome queues the record of a fire's answer in its item, named
// by the fire's key (nothing for a key that names none).
func QueueOutcome(b *pgx.Batch, key, outcome, reason, executionID string) {
	id, err := uuid.Parse(strings.TrimPrefix(key, shardapi.DeferredKeyPrefix))
	if err != nil {
		return
	}
	store.QueueDeferredOutcome(b, id, outcome, reason, executionID)
}

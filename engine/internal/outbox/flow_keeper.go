package outbox

import (
	"context"
	"encoding/json"

	"github.com/google/uuid"

	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
	"github.com/harvestd/harvest/internal/flowkeeper"
)

// The keeper kinds (store/flow_keeper.go): a queued run's acquire and a
// closed chain's release, each a keyed signal (the row's command id) to
// the keeper of the run's workflow and key, started first when there is
// none. The source run learns nothing of the answer: the keeper answers
// an acquire with its own grant signal.

// keeperRequest is a keeper row's request: the key's workflow and key,
// and the acquire's payload or the released chain.
type keeperRequest struct {
	Workflow string          `json:"workflow"`
	Key      string          `json:"key"`
	Acquire  json.RawMessage `json:"acquire,omitempty"`
	Chain    string          `json:"chain,omitempty"`
}

// KeeperKinds are the keeper kinds, for the engine's table.
func KeeperKinds() Table {
	return Table{
		store.FlowAcquireKind: commandKind{op: answersNothing(performAcquire)},
		store.FlowReleaseKind: commandKind{op: answersNothing(performRelease)},
	}
}

// performAcquire asks the keeper for the row's run's slot.
func performAcquire(ctx context.Context, d Deps, r store.OutboxRow) error {
	req, err := decodeRequest[keeperRequest](r)
	if err != nil {
		return err
	}
	return signalKeeper(ctx, d, req, flowkeeper.AcquireSignal, req.Acquire, r.CommandID)
}

// performRelease gives the row's chain's slot back to the keeper.
func performRelease(ctx context.Context, d Deps, r store.OutboxRow) error {
	req, err := decodeRequest[keeperRequest](r)
	if err != nil {
		return err
	}
	raw, err := json.Marshal(flowkeeper.Release{Chain: req.Chain})
	if err != nil {
		return err
	}
	return signalKeeper(ctx, d, req, flowkeeper.ReleaseSignal, raw, r.CommandID)
}

// signalKeeper sends the keeper of req's key the keyed signal, starting
// the keeper first when none runs (a start of its workflow id that uses
// the running one).
func signalKeeper(ctx context.Context, d Deps, req keeperRequest, signal string, payload json.RawMessage, key string) error {
	id, err := keeperRun(ctx, d, req.Workflow, req.Key)
	if err != nil {
		return err
	}
	_, err = d.Outbound.Signal(ctx, shardapi.SignalRequest{ExecutionID: id, SignalName: signal, Payload: payload,
		IdempotencyKey: key})
	return err
}

// keeperRun is the run of the keeper of workflow's key.
func keeperRun(ctx context.Context, d Deps, workflow, key string) (uuid.UUID, error) {
	input, err := json.Marshal(flowkeeper.State{Workflow: workflow, Key: key})
	if err != nil {
		return uuid.Nil, err
	}
	res, err := d.Outbound.Start(ctx, shardapi.OutboundStart{WorkflowName: flowkeeper.WorkflowName,
		WorkflowID: flowkeeper.WorkflowID(workflow, key), Input: input, ConflictPolicy: shardapi.ConflictUseExisting})
	return res.ExecutionID, err
}

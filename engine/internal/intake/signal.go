package intake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/fence"
	"github.com/harvestd/harvest/engine/internal/loop"
	"github.com/harvestd/harvest/engine/internal/runs"
	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
	"github.com/harvestd/harvest/internal/metrics"
)

// Signal appends one SignalReceived. A keyed duplicate reports
// Delivered=false, even after the run closed, provided the key first landed
// while it was live; a new key or no key on a closed run is a
// *shardapi.TerminalError. Unkeyed signals are at-least-once. A signal that is not
// a duplicate must be one the run's workflow declares, if it declares any
// (harvest.Registry.ValidateSignal); a refused one appends nothing. A
// signal to a run that continued as new is delivered to its chain's
// current run, and keys deduplicate across the chain (chain.go).
func (in *Intake) Signal(ctx context.Context, req shardapi.SignalRequest) (shardapi.SignalResult, error) {
	if req.SignalName == "" {
		return shardapi.SignalResult{}, fmt.Errorf("signal name is empty: %w", shardapi.ErrInvalidArgument)
	}
	if err := in.d.Fence.CheckOwning(); err != nil {
		return shardapi.SignalResult{}, err
	}
	return in.groupSignal(ctx, req)
}

// SignalTx delivers one signal in a transaction of its own.
func (in *Intake) SignalTx(ctx context.Context, req shardapi.SignalRequest) (shardapi.SignalResult, error) {
	res := shardapi.SignalResult{ExecutionID: req.ExecutionID}
	var (
		ex   *store.Exec
		seen bool
		fx   runs.Effects
	)
	// One round trip: fence, lock the run, look the key up; then one for
	// the ledger row and the event.
	queue := func(b *pgx.Batch) {
		store.QueueLockExec(b, req.ExecutionID, &ex)
		if req.IdempotencyKey != "" {
			store.QueueSignalKeySeen(b, req.ExecutionID, req.IdempotencyKey, &seen)
		}
	}
	err := in.d.Fence.DoBatch(ctx, queue, func(tx *fence.Tx) error {
		switch {
		case ex == nil:
			return fmt.Errorf("execution %s: %w", req.ExecutionID, shardapi.ErrNotFound)
		case seen:
			return nil
		}
		var err error
		if ex, seen, err = in.redirectSignal(ctx, tx, ex, req.IdempotencyKey); err != nil || seen {
			return err
		}
		res.ExecutionID = ex.ID
		if shardapi.IsTerminal(ex.State) {
			return &shardapi.TerminalError{ExecutionID: ex.ID.String(), State: ex.State}
		}
		if err := in.d.Reg.ValidateSignal(ex.WorkflowName, req.SignalName, req.Payload); err != nil {
			return err
		}
		res.Delivered = true
		fx, err = deliverSignal(ctx, tx, &pgx.Batch{}, runs.New(), ex, req.SignalName, req.Payload, req.IdempotencyKey)
		return err
	})
	recordSignal(res, err)
	if err != nil {
		return shardapi.SignalResult{}, err
	}
	in.d.Settle(ctx, fx, nil)
	return res, nil
}

// redirectSignal turns the locked run a signal is addressed to into its
// chain's current run, locked, and looks the key up again there: a
// signal of the same key may have landed while this one waited for that
// run's lock.
func (in *Intake) redirectSignal(ctx context.Context, tx *fence.Tx, ex *store.Exec, key string) (*store.Exec, bool, error) {
	if ex.ContinuedTo == nil {
		return ex, false, nil
	}
	cur, err := lockCurrentRun(ctx, tx, ex)
	if err != nil || key == "" {
		return cur, false, err
	}
	seen, err := store.SignalKeySeen(ctx, tx, cur.ID, key)
	if err != nil {
		return nil, false, err
	}
	return cur, seen, nil
}

// recordSignal counts a signal's outcome.
func recordSignal(res shardapi.SignalResult, err error) {
	switch {
	case err != nil:
	case res.Delivered:
		metrics.Signals.WithLabelValues("delivered").Inc()
	default:
		metrics.Signals.WithLabelValues("deduplicated").Inc()
	}
}

// deliverSignal records the signal in the ledger and appends its event
// after what b and ch hold, in one round trip, and returns what the
// changes ask of the engine once tx commits.
func deliverSignal(ctx context.Context, tx *fence.Tx, b *pgx.Batch, ch *runs.Changes, ex *store.Exec, name string, payload json.RawMessage, key string) (runs.Effects, error) {
	store.QueueInsertSignal(b, ex.ID, ex.ChainID, name, key, ex.NextEventID)
	cmd := harvest.NewCommand(harvest.EventSignalReceived, harvest.SignalReceivedData{
		SignalName: name, Payload: runs.InputOrNull(payload), IdempotencyKey: key})
	if name == harvest.FlowGrantSignal {
		ch.GrantSlot(ex)
	}
	ch.AppendEvents(ex, []harvest.Command{cmd}, true)
	err := ch.Send(ctx, tx, b)
	return ch.Effects(), err
}

// SignalWithStartRequest signals the run holding a workflow id, starting
// one first when needed.
type SignalWithStartRequest struct {
	Start         StartRequest // WorkflowID required; IdempotencyKey/shardapi.ConflictPolicy unused
	SignalName    string
	SignalPayload json.RawMessage
	// IdempotencyKey applies to the signal, scoped to (workflow name,
	// workflow id): a retry after the run closed starts and queues nothing.
	IdempotencyKey string
}

// SignalWithStart applies the signal-with-start matrix (see
// DecideSignalWithStart) and delivers the signal in the same transaction.
func (in *Intake) SignalWithStart(ctx context.Context, req SignalWithStartRequest) (shardapi.SignalWithStartResult, error) {
	if err := in.d.Fence.CheckOwning(); err != nil {
		return shardapi.SignalWithStartResult{}, err
	}
	switch {
	case req.Start.WorkflowName == "":
		return shardapi.SignalWithStartResult{}, fmt.Errorf("workflow name is empty: %w", shardapi.ErrInvalidArgument)
	case req.Start.WorkflowID == "":
		return shardapi.SignalWithStartResult{}, fmt.Errorf("workflow_id is required: %w", shardapi.ErrInvalidArgument)
	case req.SignalName == "":
		return shardapi.SignalWithStartResult{}, fmt.Errorf("signal_name is required: %w", shardapi.ErrInvalidArgument)
	}
	if !in.d.Reg.HasWorkflow(req.Start.WorkflowName) {
		return shardapi.SignalWithStartResult{}, fmt.Errorf("workflow %q: %w", req.Start.WorkflowName, shardapi.ErrUnknownWorkflow)
	}
	for attempt := 1; ; attempt++ {
		res, err := in.signalWithStartTx(ctx, req)
		if errors.Is(err, shardapi.ErrDuplicate) && attempt < maxSlotRaces {
			continue
		}
		return res, err
	}
}

// signalWithStartTx runs one signal-with-start in a transaction of its
// own: it signals the run holding the workflow id, or starts one and
// signals it (startAndSignal).
func (in *Intake) signalWithStartTx(ctx context.Context, req SignalWithStartRequest) (shardapi.SignalWithStartResult, error) {
	sr := req.Start
	res := shardapi.SignalWithStartResult{WorkflowName: sr.WorkflowName, WorkflowID: sr.WorkflowID}
	var (
		moved      *shardapi.MovedError
		closed, fx runs.Effects // of a replaced run, of the signalled one
	)
	queue := func(b *pgx.Batch) {
		if sr.Placement != nil {
			queuePlacementCheck(b, sr.WorkflowName, sr.Placement, &moved)
		}
		in.queueFlowLock(b, sr)
	}
	err := in.d.Fence.DoBatch(ctx, queue, func(tx *fence.Tx) error {
		if moved != nil {
			return moved
		}
		prior, err := lockSlotHolder(ctx, tx, sr.WorkflowName, sr.WorkflowID)
		if err != nil {
			return err
		}
		if found, err := in.findSignalKey(ctx, tx, req, &res); err != nil || found {
			return err
		}
		// Not a duplicate: the signal must be one the workflow declares.
		if err := in.d.Reg.ValidateSignal(sr.WorkflowName, req.SignalName, req.SignalPayload); err != nil {
			return err
		}
		d := DecideSignalWithStart(prior.StateOrNone(), sr.ReusePolicy)
		switch d {
		case DecideReject:
			return &shardapi.ConflictError{ExistingExecutionID: prior.ID.String(), ExistingState: prior.State}
		case DecideSignal:
			res.ExecutionID, res.State, res.SignalDelivered = prior.ID, prior.State, true
			fx, err = deliverSignal(ctx, tx, &pgx.Batch{}, runs.New(), prior, req.SignalName, req.SignalPayload, req.IdempotencyKey)
			return err
		case DecideTerminateAndStart:
			if !sr.AllowTerminate {
				return shardapi.ErrTerminateNotAllowed
			}
		}
		closed, fx, err = in.startAndSignal(ctx, tx, req, prior, d == DecideTerminateAndStart, &res)
		return err
	})
	if err != nil {
		return shardapi.SignalWithStartResult{}, err
	}
	in.d.Settle(ctx, closed, nil)
	in.d.Settle(ctx, fx, nil)
	return res, nil
}

// startAndSignal creates the run of a signal-with-start that starts one,
// once the fresh-start checks passed (terminating the running prior when
// terminate says so), and delivers the signal to it: the run's
// WorkflowStarted, its timeout timers and the signal in one round trip.
// closed is the replaced run's effects, fx the new run's.
func (in *Intake) startAndSignal(ctx context.Context, tx *fence.Tx, req SignalWithStartRequest, prior *store.Exec,
	terminate bool, res *shardapi.SignalWithStartResult) (closed, fx runs.Effects, err error) {
	sr := req.Start
	if err := in.startChecks(ctx, &sr); err != nil {
		return closed, fx, err
	}
	newID := shardapi.NewExecutionID(in.d.ShardID)
	if terminate {
		if closed, err = runs.CloseNow(ctx, tx, prior, shardapi.StateTerminated, "replaced by signal-with-start", newID.String()); err != nil {
			return closed, fx, err
		}
	}
	if err := releaseSlot(ctx, tx, prior); err != nil {
		return closed, fx, err
	}
	sr.IdempotencyKey = ""
	ex, err := insertExecution(ctx, tx, newID, sr)
	if err != nil {
		return closed, fx, err
	}
	b, ch := &pgx.Batch{}, runs.New()
	queueTimeoutTimersNow(b, tx, newID, sr.timeouts)
	ch.AppendEvents(ex, []harvest.Command{startedCommand(sr)}, true)
	res.ExecutionID, res.State, res.StartedFresh, res.SignalDelivered = newID, sr.stateOf(false), true, true
	fx, err = deliverSignal(ctx, tx, b, ch, ex, req.SignalName, req.SignalPayload, req.IdempotencyKey)
	fx.Wake.Add(loop.Flow, sr.flow != nil)
	return closed, fx, err
}

// startChecks are the fresh-start checks of a signal-with-start about to
// create a run: its input, the admission gate, its timeouts, its flow
// control (a limited workflow's run starts QUEUED, the signal waiting in
// its history).
func (in *Intake) startChecks(ctx context.Context, sr *StartRequest) error {
	if err := in.d.Reg.ValidateInput(sr.WorkflowName, sr.Input); err != nil {
		return err
	}
	if err := in.checkGate(ctx, sr.WorkflowName); err != nil {
		return err
	}
	if err := in.resolveTimeouts(sr); err != nil {
		return err
	}
	return in.resolveFlow(sr)
}

// findSignalKey looks for the signal key on any run of the workflow id.
func (in *Intake) findSignalKey(ctx context.Context, tx *fence.Tx, req SignalWithStartRequest, res *shardapi.SignalWithStartResult) (bool, error) {
	if req.IdempotencyKey == "" {
		return false, nil
	}
	id, state, found, err := store.FindSignalKey(ctx, tx, req.Start.WorkflowName, req.Start.WorkflowID, req.IdempotencyKey)
	if found {
		res.ExecutionID, res.State = id, state
	}
	return found, err
}

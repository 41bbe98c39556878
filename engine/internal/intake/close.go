package intake

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/fence"
	"github.com/harvestd/harvest/engine/internal/runs"
	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
)

// Cancel asks a running run to cancel: WorkflowCancelRequested is appended
// and a workflow task made due, in one transaction. The run stays RUNNING
// until its code returns (see harvest.CanceledError): CANCELLED when it
// returns the cancellation. A repeat finds the recorded request and
// writes nothing (Newly=false). A closed run is a *shardapi.TerminalError. A run
// that continued as new passes the request on to its chain's current run
// (shardapi.CloseResult.ExecutionID). A QUEUED run, whose code has not
// run, closes CANCELLED at once (freeing its place in the queue).
func (in *Intake) Cancel(ctx context.Context, id uuid.UUID, reason string) (shardapi.CloseResult, error) {
	res := shardapi.CloseResult{ExecutionID: id, Reason: reason, State: shardapi.StateRunning, CancelRequested: true}
	var fx runs.Effects
	err := in.d.Fence.Do(ctx, func(tx *fence.Tx) error {
		fx = runs.Effects{}
		ex, err := lockChainRun(ctx, tx, id)
		if err != nil {
			return err
		}
		res.ExecutionID = ex.ID
		if shardapi.IsTerminal(ex.State) {
			return &shardapi.TerminalError{ExecutionID: ex.ID.String(), State: ex.State}
		}
		if err := refuseSystem(ex, "cancelled"); err != nil {
			return err
		}
		if ex.State == shardapi.StateQueued {
			res.State, res.Newly = shardapi.StateCancelled, true
			fx, err = runs.CloseNow(ctx, tx, ex, shardapi.StateCancelled, reason, "")
			return err
		}
		requested, err := hasCancelRequest(ctx, tx, ex.ID)
		if err != nil || requested {
			return err
		}
		res.Newly = true
		cmd := harvest.NewCommand(harvest.EventWorkflowCancelRequested, harvest.WorkflowCancelRequestedData{Reason: reason})
		ch := runs.New()
		ch.AppendEvents(ex, []harvest.Command{cmd}, true)
		if err := ch.Send(ctx, tx, &pgx.Batch{}); err != nil {
			return err
		}
		fx = ch.Effects()
		return in.d.Crash.At(ctx, CrashCancel)
	})
	if err != nil {
		return shardapi.CloseResult{}, err
	}
	in.d.Settle(ctx, fx, nil)
	return res, nil
}

// hasCancelRequest reports whether the run's history holds a cancel
// request already: the read-only dedup of Cancel.
func hasCancelRequest(ctx context.Context, tx *fence.Tx, id uuid.UUID) (bool, error) {
	found, err := store.HasEvent(ctx, tx, id, string(harvest.EventWorkflowCancelRequested))
	if err != nil {
		return false, fmt.Errorf("find cancel request of %s: %w", id, err)
	}
	return found, nil
}

// Terminate force-closes a run as TERMINATED and releases its workflow id.
// Terminating a closed run is a no-op (Newly=false); terminating a run
// that continued as new terminates its chain's current run. A system
// workflow's run (a keeper, whose state is the slots it holds) is not
// terminated.
func (in *Intake) Terminate(ctx context.Context, id uuid.UUID, reason string) (shardapi.CloseResult, error) {
	return in.close(ctx, id, shardapi.StateTerminated, reason)
}

func (in *Intake) close(ctx context.Context, id uuid.UUID, state, reason string) (shardapi.CloseResult, error) {
	res := shardapi.CloseResult{ExecutionID: id, Reason: reason}
	var fx runs.Effects
	err := in.d.Fence.Do(ctx, func(tx *fence.Tx) error {
		fx = runs.Effects{}
		ex, err := lockChainRun(ctx, tx, id)
		if err != nil {
			return err
		}
		res.ExecutionID = ex.ID
		if shardapi.IsTerminal(ex.State) {
			res.State = ex.State
			return nil
		}
		if err := refuseSystem(ex, "terminated"); err != nil {
			return err
		}
		res.State, res.Newly = state, true
		fx, err = runs.CloseNow(ctx, tx, ex, state, reason, "")
		return err
	})
	if err != nil {
		return shardapi.CloseResult{}, err
	}
	in.d.Settle(ctx, fx, nil)
	return res, nil
}

// refuseSystem refuses to close by hand (how: "cancelled", "terminated")
// a run of a system workflow: a keeper's state is the slots it holds, and
// a successor would start with none.
func refuseSystem(ex *store.Exec, how string) error {
	if !harvest.IsSystemWorkflow(ex.WorkflowName) {
		return nil
	}
	return fmt.Errorf("%s is a run of %s, Harvest's own: it is not %s: %w", ex.ID, ex.WorkflowName, how, shardapi.ErrInvalidArgument)
}

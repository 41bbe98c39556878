package engine

import (
	"context"

	"github.com/google/uuid"
)

// CloseResult is the outcome of a cancel or terminate.
type CloseResult struct {
	ExecutionID uuid.UUID
	State       string
	Reason      string
	// Newly is true when this request closed the run.
	Newly bool
}

// Cancel closes a running run as CANCELLED: WorkflowCancelled is appended,
// pending activities and timers are dropped (a running activity's result
// is then refused). A closed run is a *TerminalError.
func (e *Engine) Cancel(ctx context.Context, id uuid.UUID, reason string) (CloseResult, error) {
	return e.close(ctx, id, StateCancelled, reason, true)
}

// Terminate force-closes a run as TERMINATED and releases its workflow id.
// Terminating a closed run is a no-op (Newly=false).
func (e *Engine) Terminate(ctx context.Context, id uuid.UUID, reason string) (CloseResult, error) {
	return e.close(ctx, id, StateTerminated, reason, false)
}

func (e *Engine) close(ctx context.Context, id uuid.UUID, state, reason string, refuseClosed bool) (CloseResult, error) {
	res := CloseResult{ExecutionID: id, Reason: reason}
	err := e.withTx(ctx, func(tx *fencedTx) error {
		ex, err := lockExecution(ctx, tx, id)
		if err != nil {
			return err
		}
		if IsTerminal(ex.State) {
			res.State = ex.State
			if refuseClosed {
				return &TerminalError{ExecutionID: id.String(), State: ex.State}
			}
			return nil
		}
		res.State, res.Newly = state, true
		return forceClose(ctx, tx, ex, state, reason, "")
	})
	if err != nil {
		return CloseResult{}, err
	}
	if res.Newly {
		e.closed.fire(id)
		e.nudge(e.cbWake) // its callbacks, if any, are due
	}
	return res, nil
}

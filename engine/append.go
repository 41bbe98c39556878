package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/fence"
	"github.com/harvestd/harvest/engine/internal/runs"
	"github.com/harvestd/harvest/engine/internal/store"
)

// lockExecution takes the execution's row lock (ErrNotFound if absent).
func lockExecution(ctx context.Context, tx *fence.Tx, id uuid.UUID) (*store.Exec, error) {
	r, err := store.LockExec(ctx, tx, id)
	if err != nil {
		return nil, fmt.Errorf("lock execution %s: %w", id, translate(err))
	}
	return r, nil
}

// sendChanges queues ch, changes of runs locked by tx, on b after what b
// holds, and sends b in one round trip: the single paths (cancel,
// terminate, a timer, a timeout, a signal, an activity outcome) write
// through the same change set as the batches.
func sendChanges(ctx context.Context, tx *fence.Tx, b *pgx.Batch, ch *runs.Changes) error {
	ch.Ahead = tx.Ahead()
	ch.Queue(b)
	return sendBatch(ctx, tx, b)
}

// sendBatch sends the queued statements in one round trip.
func sendBatch(ctx context.Context, tx *fence.Tx, b *pgx.Batch) error {
	if b.Len() == 0 {
		return nil
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("write: %w", translate(err))
	}
	return nil
}

// forceClose adds WorkflowCancelled/WorkflowTerminated to ch and seals
// the run.
func forceClose(ch *runs.Changes, ex *store.Exec, state, reason, replacedBy string) {
	t := harvest.EventWorkflowCancelled
	if state == StateTerminated {
		t = harvest.EventWorkflowTerminated
	}
	cmd := harvest.NewCommand(t, harvest.WorkflowClosedData{Reason: reason, ReplacedBy: replacedBy})
	ch.AppendEvents(ex, []harvest.Command{cmd}, false)
	ch.Close(ex, state, nil, nil)
}

// closeNow closes the run in its own round trip (a run that must give
// up its slot before the caller's next statement), and returns what the
// close asks of the engine once tx commits.
func closeNow(ctx context.Context, tx *fence.Tx, ex *store.Exec, state, reason, replacedBy string) (runs.Effects, error) {
	ch := runs.New()
	forceClose(ch, ex, state, reason, replacedBy)
	err := sendChanges(ctx, tx, &pgx.Batch{}, ch)
	return ch.Effects(), err
}

func nullJSON(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

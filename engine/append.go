package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/fence"
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

// appendEvents appends events after the locked execution's last one and
// advances next_event_id; wake schedules a workflow task now.
func appendEvents(ctx context.Context, tx *fence.Tx, ex *store.Exec, cmds []harvest.Command, wake bool) error {
	b := &pgx.Batch{}
	queueAppendEvents(b, tx, ex, cmds, wake)
	return sendBatch(ctx, tx, b)
}

// queueAppendEvents queues what appendEvents does, for one round trip
// with other statements of tx. The events are stamped with tx's
// workflow time.
func queueAppendEvents(b *pgx.Batch, tx *fence.Tx, ex *store.Exec, cmds []harvest.Command, wake bool) {
	if len(cmds) == 0 {
		return
	}
	ids := make([]int64, len(cmds))
	types := make([]string, len(cmds))
	data := make([]string, len(cmds))
	for i, c := range cmds {
		ids[i] = ex.NextEventID + int64(i)
		types[i] = string(c.Type)
		data[i] = string(c.Data)
	}
	store.QueueAppendRunEvents(b, ex.ID, ids, types, data, micros(tx.Ahead()))
	ex.NextEventID += int64(len(cmds))
	store.QueueAdvanceRun(b, ex.ID, ex.NextEventID, wake)
}

// queueCloseExecution queues what closeExecution does.
func queueCloseExecution(b *pgx.Batch, ex *store.Exec, state string, output, errInfo json.RawMessage) {
	releaseSlot := state == StateTerminated || state == StateContinuedAsNew
	store.QueueCloseRun(b, ex.ID, state, nullJSON(output), nullJSON(errInfo), releaseSlot)
	store.QueueDeleteRunTasks(b, ex.ID)
	store.QueueDeleteRunTimers(b, ex.ID)
	store.QueueRunCallbacksDue(b, ex.ID)
	store.QueueCloseOutbox(b, []uuid.UUID{ex.ID})
	ex.State = state
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

// forceClose appends WorkflowCancelled/WorkflowTerminated and seals the run.
func forceClose(ctx context.Context, tx *fence.Tx, ex *store.Exec, state, reason, replacedBy string) error {
	t := harvest.EventWorkflowCancelled
	if state == StateTerminated {
		t = harvest.EventWorkflowTerminated
	}
	cmd := harvest.NewCommand(t, harvest.WorkflowClosedData{Reason: reason, ReplacedBy: replacedBy})
	b := &pgx.Batch{}
	queueAppendEvents(b, tx, ex, []harvest.Command{cmd}, false)
	queueCloseExecution(b, ex, state, nil, nil)
	return sendBatch(ctx, tx, b)
}

func nullJSON(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

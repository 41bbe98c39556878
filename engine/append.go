package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/fence"
	"github.com/harvestd/harvest/engine/internal/store"
)

// execRow is the locked part of an execution a write transaction needs.
type execRow struct {
	ID           uuid.UUID
	WorkflowName string
	WorkflowID   string
	State        string
	NextEventID  int64
	CreatedAt    time.Time
	// ChainID is the first run of the run's continue-as-new chain (its
	// own id on a first run); ContinuedTo its successor, once it
	// continued as new (chain.go).
	ChainID     uuid.UUID
	ContinuedTo *uuid.UUID
	// IsChild: the run is a child workflow (read by the workflow loop's
	// claim only, for its crash point).
	IsChild bool
}

// scanTargets are the scan destinations of store.ExecRowColumns.
func (r *execRow) scanTargets() []any {
	return []any{&r.WorkflowName, &r.WorkflowID, &r.State, &r.NextEventID, &r.CreatedAt, &r.ChainID, &r.ContinuedTo}
}

// lockExecution takes the execution's row lock (ErrNotFound if absent).
func lockExecution(ctx context.Context, tx *fence.Tx, id uuid.UUID) (*execRow, error) {
	r := &execRow{ID: id}
	if err := store.LockRun(ctx, tx, id, r.scanTargets()...); err != nil {
		return nil, fmt.Errorf("lock execution %s: %w", id, translate(err))
	}
	return r, nil
}

// queueLockExecution queues lockExecution; *ex stays nil when the
// execution does not exist.
func queueLockExecution(b *pgx.Batch, id uuid.UUID, ex **execRow) {
	store.QueueLockRun(b, id).QueryRow(func(row pgx.Row) error {
		r := &execRow{ID: id}
		err := row.Scan(r.scanTargets()...)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("lock execution %s: %w", id, err)
		}
		*ex = r
		return nil
	})
}

// queueLockExecutions queues the row locks of the executions ids (in id
// order, so that two holders never take them crosswise) and fills exs
// with the ones that exist.
func queueLockExecutions(b *pgx.Batch, ids []uuid.UUID, exs map[uuid.UUID]*execRow) {
	ids = slices.Clone(ids)
	slices.SortFunc(ids, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
	ids = slices.Compact(ids)
	store.QueueLockRuns(b, ids).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			r := &execRow{}
			if err := rows.Scan(append([]any{&r.ID}, r.scanTargets()...)...); err != nil {
				return err
			}
			exs[r.ID] = r
		}
		return rows.Err()
	})
}

// appendEvents appends events after the locked execution's last one and
// advances next_event_id; wake schedules a workflow task now.
func appendEvents(ctx context.Context, tx *fence.Tx, ex *execRow, cmds []harvest.Command, wake bool) error {
	b := &pgx.Batch{}
	queueAppendEvents(b, tx, ex, cmds, wake)
	return sendBatch(ctx, tx, b)
}

// queueAppendEvents queues what appendEvents does, for one round trip
// with other statements of tx. The events are stamped with tx's
// workflow time.
func queueAppendEvents(b *pgx.Batch, tx *fence.Tx, ex *execRow, cmds []harvest.Command, wake bool) {
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
func queueCloseExecution(b *pgx.Batch, ex *execRow, state string, output, errInfo json.RawMessage) {
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
func forceClose(ctx context.Context, tx *fence.Tx, ex *execRow, state, reason, replacedBy string) error {
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

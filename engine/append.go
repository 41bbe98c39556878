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
	err := tx.QueryRow(ctx, `
		SELECT `+store.ExecRowColumns+`
		  FROM harvest_executions WHERE execution_id = $1 FOR UPDATE`, id).
		Scan(r.scanTargets()...)
	if err != nil {
		return nil, fmt.Errorf("lock execution %s: %w", id, translate(err))
	}
	return r, nil
}

// queueLockExecution queues lockExecution; *ex stays nil when the
// execution does not exist.
func queueLockExecution(b *pgx.Batch, id uuid.UUID, ex **execRow) {
	b.Queue(`
		SELECT `+store.ExecRowColumns+`
		  FROM harvest_executions WHERE execution_id = $1 FOR UPDATE`, id).
		QueryRow(func(row pgx.Row) error {
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
	b.Queue(`
		SELECT execution_id, `+store.ExecRowColumns+`
		  FROM harvest_executions WHERE execution_id = ANY($1) ORDER BY execution_id FOR UPDATE`, ids).
		Query(func(rows pgx.Rows) error {
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
	b.Queue(`
		INSERT INTO harvest_events (execution_id, event_id, event_type, data, created_at)
		SELECT $1, u.event_id, u.event_type, u.data::jsonb, now() + $5 * interval '1 microsecond'
		  FROM unnest($2::bigint[], $3::text[], $4::text[]) AS u(event_id, event_type, data)`,
		ex.ID, ids, types, data, micros(tx.Ahead()))
	ex.NextEventID += int64(len(cmds))
	b.Queue(`
		UPDATE harvest_executions
		   SET next_event_id = $2, updated_at = now(),
		       wf_task_due_at = CASE WHEN $3 THEN least(coalesce(wf_task_due_at, now()), now()) ELSE wf_task_due_at END
		 WHERE execution_id = $1`, ex.ID, ex.NextEventID, wake)
}

// queueCloseExecution queues what closeExecution does.
func queueCloseExecution(b *pgx.Batch, ex *execRow, state string, output, errInfo json.RawMessage) {
	releaseSlot := state == StateTerminated || state == StateContinuedAsNew
	b.Queue(`
		UPDATE harvest_executions
		   SET state = $2, output = $3, error = $4, completed_at = now(), updated_at = now(),
		       wf_task_due_at = NULL, wf_task_attempt = 0, last_error = NULL,
		       holds_slot = holds_slot AND NOT $5
		 WHERE execution_id = $1`, ex.ID, state, nullJSON(output), nullJSON(errInfo), releaseSlot)
	b.Queue(`DELETE FROM harvest_tasks WHERE execution_id = $1`, ex.ID)
	b.Queue(`DELETE FROM harvest_timers WHERE execution_id = $1`, ex.ID)
	b.Queue(`
		UPDATE harvest_callbacks SET status = 'due', next_attempt_at = now()
		 WHERE execution_id = $1 AND status = 'pending'`, ex.ID)
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

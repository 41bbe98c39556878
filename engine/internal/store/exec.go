package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Exec is the locked part of a run a write transaction needs: the row
// ExecRowColumns read.
type Exec struct {
	ID           uuid.UUID
	WorkflowName string
	WorkflowID   string
	State        string
	NextEventID  int64
	CreatedAt    time.Time
	// ChainID is the first run of the run's continue-as-new chain (its
	// own id on a first run); ContinuedTo its successor, once it
	// continued as new.
	ChainID     uuid.UUID
	ContinuedTo *uuid.UUID
	// IsChild: the run is a child workflow (read by the workflow loop's
	// claim only, for its crash point).
	IsChild bool
}

// Targets are the scan destinations of ExecRowColumns.
func (r *Exec) Targets() []any {
	return []any{&r.WorkflowName, &r.WorkflowID, &r.State, &r.NextEventID, &r.CreatedAt, &r.ChainID, &r.ContinuedTo}
}

// LockExec takes run id's row lock and reads it (shardapi.ErrNotFound
// when the run does not exist; errors translated).
func LockExec(ctx context.Context, q Querier, id uuid.UUID) (*Exec, error) {
	r := &Exec{ID: id}
	if err := LockRun(ctx, q, id, r.Targets()...); err != nil {
		return nil, fmt.Errorf("lock execution %s: %w", id, Translate(err))
	}
	return r, nil
}

// QueueLockExec queues LockExec; *ex stays nil when the run does not
// exist.
func QueueLockExec(b *pgx.Batch, id uuid.UUID, ex **Exec) {
	QueueLockRun(b, id).QueryRow(func(row pgx.Row) error {
		r := &Exec{ID: id}
		err := row.Scan(r.Targets()...)
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

// QueueLockExecs queues the row locks of the runs ids (in id order, so
// that two holders never take them crosswise) and fills exs with the ones
// that exist.
func QueueLockExecs(b *pgx.Batch, ids []uuid.UUID, exs map[uuid.UUID]*Exec) {
	ids = slices.Clone(ids)
	slices.SortFunc(ids, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
	ids = slices.Compact(ids)
	QueueLockRuns(b, ids).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			r := &Exec{}
			if err := rows.Scan(append([]any{&r.ID}, r.Targets()...)...); err != nil {
				return err
			}
			exs[r.ID] = r
		}
		return rows.Err()
	})
}

// StateOrNone is r's state, or "" when r is nil (no run).
func (r *Exec) StateOrNone() string {
	if r == nil {
		return ""
	}
	return r.State
}

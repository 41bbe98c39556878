package outbox

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/fence"
	"github.com/harvestd/harvest/engine/internal/store"
)

// A signal sent to a workflow id (harvest.SignalExternalWorkflow) goes to
// the id's running run, resolved once: the first attempt asks
// Deps.Outbound.Resolve (through the normal routing, any shard), records
// the execution id it got in the row's request (resolved_execution_id) in
// a fenced transaction, and only then sends the keyed signal. Every later
// attempt (a retry, a crash after the record: CrashResolved) reads the
// recorded id and signals that run under the same key, so one send never
// reaches two runs even if the workflow id has moved on to another run
// meanwhile. No running run is a definite ErrNotFound: the future fails
// with "not_found", nothing is recorded in the row.

// signalRow is the request of a Signal row: the command's data and, once
// recorded, the run a workflow id target resolved to.
type signalRow struct {
	harvest.SignalExternalInitiatedData
	Resolved string `json:"resolved_execution_id,omitempty"`
}

// signalTarget is the run a send goes to: its execution id, or the run
// its workflow id resolved to.
func signalTarget(ctx context.Context, d Deps, r store.OutboxRow, req signalRow) (uuid.UUID, error) {
	switch {
	case req.WorkflowID == "":
		return parseTarget(req.ExecutionID)
	case req.Resolved != "":
		return parseTarget(req.Resolved)
	}
	id, err := d.Outbound.Resolve(ctx, req.WorkflowName, req.WorkflowID)
	if err != nil {
		return uuid.Nil, err
	}
	if id, err = RecordResolved(ctx, d.Fence, r.ID, id); err != nil {
		return uuid.Nil, err
	}
	return id, d.Crash.At(ctx, CrashResolved)
}

// RecordResolved records id as row rowID's resolved target and returns
// the one recorded (an earlier attempt's, if it won); ErrGone when the
// row was recorded meanwhile.
func RecordResolved(ctx context.Context, f *fence.Fence, rowID int64, id uuid.UUID) (uuid.UUID, error) {
	var got string
	err := f.Do(ctx, func(tx *fence.Tx) (err error) {
		got, err = store.RecordResolved(ctx, tx, rowID, id)
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, fmt.Errorf("outbox row %d: %w", rowID, ErrGone)
	}
	if err != nil {
		return uuid.Nil, fmt.Errorf("record resolved target: %w", err)
	}
	return parseTarget(got)
}

package engine

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
// Config.Outbound.Resolve (through the normal routing, any shard), records
// the execution id it got in the row's request (resolved_execution_id) in
// a fenced transaction, and only then sends the keyed signal. Every later
// attempt (a retry, a crash after the record: crashOutboxResolved) reads
// the recorded id and signals that run under the same key, so one send
// never reaches two runs even if the workflow id has moved on to another
// run meanwhile. No running run is a definite ErrNotFound: the future
// fails with "not_found", nothing is recorded in the row.

// signalRow is the request of an outboxSignal row: the command's data
// and, once recorded, the run a workflow id target resolved to.
type signalRow struct {
	harvest.SignalExternalInitiatedData
	Resolved string `json:"resolved_execution_id,omitempty"`
}

// signalTarget is the run a send goes to: its execution id, or the run
// its workflow id resolved to.
func (e *Engine) signalTarget(ctx context.Context, r store.OutboxRow, d signalRow) (uuid.UUID, error) {
	switch {
	case d.WorkflowID == "":
		return parseTarget(d.ExecutionID)
	case d.Resolved != "":
		return parseTarget(d.Resolved)
	}
	id, err := e.cfg.Outbound.Resolve(ctx, d.WorkflowName, d.WorkflowID)
	if err != nil {
		return uuid.Nil, err
	}
	if id, err = e.recordResolved(ctx, r.ID, id); err != nil {
		return uuid.Nil, err
	}
	return id, e.crashAt(ctx, crashOutboxResolved)
}

// recordResolved records id as row's resolved target and returns the
// one recorded (an earlier attempt's, if it won).
func (e *Engine) recordResolved(ctx context.Context, rowID int64, id uuid.UUID) (uuid.UUID, error) {
	var got string
	err := e.withTx(ctx, func(tx *fence.Tx) (err error) {
		got, err = store.RecordResolved(ctx, tx, rowID, id)
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, fmt.Errorf("outbox row %d: %w", rowID, errOutboxGone)
	}
	if err != nil {
		return uuid.Nil, fmt.Errorf("record resolved target: %w", err)
	}
	return parseTarget(got)
}

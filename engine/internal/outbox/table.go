package outbox

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
)

// The command kinds: the rows workflow commands (Route) and closes
// insert.
//
//   - Signal: a SignalExternalInitiated command; a keyed signal
//     (harvest.ExternalSignalKey), answered by ExternalSignalDelivered or
//     ExternalSignalFailed in the source run. A workflow id target is
//     resolved to its running run first, once, and that run recorded in
//     the row before the signal (resolve.go).
//   - StartChild: a ChildWorkflowInitiated command; a keyed start
//     (harvest.ChildStartKey), answered by ChildWorkflowStarted or
//     ChildWorkflowStartFailed in the parent.
//   - ChildDone: a child's close, inserted with it; a keyed signal
//     (harvest.ChildDoneKey) of the system signal harvest.ChildClosedSignal
//     to the parent. Nothing is recorded back (the child is closed).
//   - CloseChild: the parent close policy of one open child, inserted
//     with the parent's close; a terminate or a cancel request.
//
// A schedule's fire and a deferred item are keyed-start kinds the engine
// adds to the table (KeyedStart).
const (
	Signal     = "signal"
	StartChild = "start_child"
	ChildDone  = "child_done"
	CloseChild = "close_child"
)

// Kind is one kind of outbox row: how a row of it is performed and what
// its definite answer records beside the outcome event (in the
// recorder's batch, after the source run's lock and the row's delete).
type Kind interface {
	// Perform performs the row's keyed operation once: its answer, or a
	// retry.
	Perform(ctx context.Context, d Deps, r store.OutboxRow) Answer
	// Record queues what a definite answer records beside its outcome
	// event; ex is the source run (nil for none).
	Record(b *pgx.Batch, ex *store.Exec, a Answer) error
}

// Table is every kind of outbox row, by the kind name its rows carry. A
// new kind is a file that implements Kind and one entry in the table.
type Table map[string]Kind

// Commands is a table of the command kinds, to which the engine adds the
// keyed-start kinds.
func Commands() Table {
	return Table{
		Signal:     commandKind{op: performSignal},
		StartChild: commandKind{op: performStartChild, extra: queueChildStart},
		ChildDone:  commandKind{op: answersNothing(performChildDone)},
		CloseChild: commandKind{op: answersNothing(performCloseChild)},
	}
}

// unknownKind is the kind of a row whose kind no entry of the table
// names: a definite refusal that records nothing, so the row is deleted.
var unknownKind = commandKind{op: performUnknown}

// Of is the kind named name, or one that refuses the row for good.
func (t Table) Of(name string) Kind {
	if k, ok := t[name]; ok {
		return k
	}
	return unknownKind
}

// performUnknown refuses a row of an unknown kind.
func performUnknown(_ context.Context, _ Deps, r store.OutboxRow) (*harvest.Command, error) {
	return nil, fmt.Errorf("outbox row %d: unknown kind %q: %w", r.ID, r.Kind, shardapi.ErrInvalidArgument)
}

// commandOp is the keyed operation of a commandKind: the outcome event to
// append to the source run (nil for none) and the error it got.
type commandOp func(ctx context.Context, d Deps, r store.OutboxRow) (*harvest.Command, error)

// commandKind is a kind that acts on another run for its source run: a
// definite answer (success or a definite refusal) appends its outcome
// event, any other error is retried.
type commandKind struct {
	op commandOp
	// extra queues what a definite answer records beside its outcome
	// event (nil: nothing).
	extra func(b *pgx.Batch, ex *store.Exec, a Answer) error
}

// Perform performs the row's keyed operation and sorts its error into a
// definite answer or a retry.
func (k commandKind) Perform(ctx context.Context, d Deps, r store.OutboxRow) Answer {
	outcome, err := k.op(ctx, d, r)
	if err != nil && !shardapi.IsDefinite(err) {
		d.Log.Debug().Err(err).Str("execution_id", r.ExecutionID.String()).Str("kind", r.Kind).
			Int("attempt", r.Attempts).Msg("outbox attempt failed")
		return Answer{row: r, retry: err}
	}
	return Answer{row: r, outcome: outcome, answer: err}
}

// Record queues the kind's extra record, if it has one.
func (k commandKind) Record(b *pgx.Batch, ex *store.Exec, a Answer) error {
	if k.extra == nil {
		return nil
	}
	return k.extra(b, ex, a)
}

// answersNothing is the commandOp of an operation whose source run
// learns nothing of its answer.
func answersNothing(op func(context.Context, Deps, store.OutboxRow) error) commandOp {
	return func(ctx context.Context, d Deps, r store.OutboxRow) (*harvest.Command, error) {
		return nil, op(ctx, d, r)
	}
}

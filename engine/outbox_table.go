package engine

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/store"
)

// outboxKind is one kind of outbox row: how a row of it is performed and
// what its definite answer records beside the outcome event (in the
// recorder's batch, after the source run's lock and the row's delete).
type outboxKind interface {
	// perform performs the row's keyed operation once: its answer, or a
	// retry.
	perform(ctx context.Context, e *Engine, r store.OutboxRow) outboxAnswer
	// record queues what a definite answer records beside its outcome
	// event; ex is the source run (nil for none).
	record(b *pgx.Batch, ex *store.Exec, a outboxAnswer) error
}

// outboxKinds is every kind of outbox row, by the kind name its rows
// carry. A new kind is a file that implements outboxKind and one entry
// here.
var outboxKinds = map[string]outboxKind{
	outboxSignal:        commandKind{op: (*Engine).performSignal},
	outboxStartChild:    commandKind{op: (*Engine).performStartChild, extra: queueChildStart},
	outboxChildDone:     commandKind{op: answersNothing((*Engine).performChildDone)},
	outboxCloseChild:    commandKind{op: answersNothing((*Engine).performCloseChild)},
	outboxScheduleStart: scheduleStartKind,
	outboxDeferredStart: deferredStartKind,
}

// unknownOutboxKind is the kind of a row whose kind no entry of
// outboxKinds names: a definite refusal that records nothing, so the row
// is deleted.
var unknownOutboxKind = commandKind{op: performUnknown}

// outboxKindOf is the kind named name, or unknownOutboxKind.
func outboxKindOf(name string) outboxKind {
	if k, ok := outboxKinds[name]; ok {
		return k
	}
	return unknownOutboxKind
}

// performUnknown refuses a row of an unknown kind.
func performUnknown(_ *Engine, _ context.Context, r store.OutboxRow) (*harvest.Command, error) {
	return nil, fmt.Errorf("outbox row %d: unknown kind %q: %w", r.ID, r.Kind, ErrInvalidArgument)
}

// commandOp is the keyed operation of a commandKind: the outcome event to
// append to the source run (nil for none) and the error it got.
type commandOp func(e *Engine, ctx context.Context, r store.OutboxRow) (*harvest.Command, error)

// commandKind is a kind that acts on another run for its source run: a
// definite answer (success or a definite refusal) appends its outcome
// event, any other error is retried.
type commandKind struct {
	op commandOp
	// extra queues what a definite answer records beside its outcome
	// event (nil: nothing).
	extra func(b *pgx.Batch, ex *store.Exec, a outboxAnswer) error
}

// perform performs the row's keyed operation and sorts its error into a
// definite answer or a retry.
func (k commandKind) perform(ctx context.Context, e *Engine, r store.OutboxRow) outboxAnswer {
	outcome, err := k.op(e, ctx, r)
	if err != nil && !IsDefinite(err) {
		e.log.Debug().Err(err).Str("execution_id", r.ExecutionID.String()).Str("kind", r.Kind).
			Int("attempt", r.Attempts).Msg("outbox attempt failed")
		return outboxAnswer{row: r, retry: err}
	}
	return outboxAnswer{row: r, outcome: outcome, answer: err}
}

// record queues the kind's extra record, if it has one.
func (k commandKind) record(b *pgx.Batch, ex *store.Exec, a outboxAnswer) error {
	if k.extra == nil {
		return nil
	}
	return k.extra(b, ex, a)
}

// answersNothing is the commandOp of an operation whose source run
// learns nothing of its answer.
func answersNothing(op func(*Engine, context.Context, store.OutboxRow) error) commandOp {
	return func(e *Engine, ctx context.Context, r store.OutboxRow) (*harvest.Command, error) {
		return nil, op(e, ctx, r)
	}
}

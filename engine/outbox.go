package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/fence"
	"github.com/harvestd/harvest/engine/internal/runs"
	"github.com/harvestd/harvest/engine/internal/store"
)

// The outbox (migration 011) holds the commands that act on other runs,
// each inserted by the transaction that records its cause:
//
//   - outboxSignal: a SignalExternalInitiated command; a keyed signal
//     (harvest.ExternalSignalKey), answered by ExternalSignalDelivered or
//     ExternalSignalFailed in the source run. A workflow id target is
//     resolved to its running run first, once, and that run recorded in
//     the row before the signal (outbox_resolve.go).
//   - outboxStartChild: a ChildWorkflowInitiated command; a keyed start
//     (harvest.ChildStartKey), answered by ChildWorkflowStarted or
//     ChildWorkflowStartFailed in the parent.
//   - outboxChildDone: a child's close, inserted with it; a keyed signal
//     (harvest.ChildDoneKey) of the system signal harvest.ChildClosedSignal
//     to the parent. Nothing is recorded back (the child is closed).
//   - outboxCloseChild: the parent close policy of one open child,
//     inserted with the parent's close; a terminate or a cancel request.
//   - outboxScheduleStart: a schedule's fire, inserted with the schedule's
//     cursor (schedule_outbox.go); a keyed start, answered in the fire's
//     row.
//   - outboxDeferredStart: a deferred item's fire, inserted with its close
//     (deferred_outbox.go); a keyed start, answered in the item.
//
// Each kind is one entry of outboxKinds (outbox_table.go): how its rows
// are performed and what their answers record.
//
// The loop claims due rows (their due_at moves ahead by outboxLease: a
// crash retries after it, or at once when the lease changed hands: a claim
// stamps the epoch), performs each as its kind does through
// Config.Outbound, and on a definite answer records it in one fenced
// transaction that locks the source run, appends the outcome event
// (waking the run's workflow task), queues what the kind records beside
// it and deletes the row; only a row that still exists is recorded, so one
// command gets one outcome event however many attempts ran. Other errors
// are retried with backoff. The keyed operation makes every retry land
// once on the target.
const (
	outboxSignal     = "signal"
	outboxStartChild = "start_child"
	outboxChildDone  = "child_done"
	outboxCloseChild = "close_child"
)

const (
	outboxBatch = 32
	// outboxLease is how long a claimed row waits before another attempt
	// (a crash retries after it).
	outboxLease = 30 * time.Second
	// outboxCallTimeout bounds one keyed operation.
	outboxCallTimeout = 20 * time.Second
)

// outboxLoop performs due outbox rows until ctx ends.
func (e *Engine) outboxLoop(ctx context.Context) {
	e.drainLoop(ctx, e.obWake, func(ctx context.Context) (bool, error) {
		n, err := e.runOutbox(ctx)
		return n == outboxBatch, err
	})
}

// runOutbox claims due rows, performs them concurrently and records
// their answers in one transaction.
func (e *Engine) runOutbox(ctx context.Context) (int, error) {
	rows, err := e.claimOutbox(ctx)
	if err != nil || len(rows) == 0 {
		return 0, err
	}
	if err := e.crashAt(ctx, crashOutboxClaimed); err != nil {
		return len(rows), err
	}
	answers := make([]outboxAnswer, len(rows))
	var wg sync.WaitGroup
	for i, r := range rows {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = e.performOutbox(ctx, r)
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return len(rows), ctx.Err()
	}
	if err := e.crashAt(ctx, crashOutboxPerformed); err != nil {
		return len(rows), err
	}
	return len(rows), e.settleOutbox(ctx, answers)
}

// outboxAnswer is what one attempt of a row got: the outcome event to
// append (nil for none), the definite error, or a retry.
type outboxAnswer struct {
	row     store.OutboxRow
	outcome *harvest.Command
	answer  error
	retry   error
	// fire is a keyed start's answer (keyedStart kinds only).
	fire *fireAnswer
}

// settleOutbox records the definite answers in one transaction (one at a
// time if that fails) and schedules the retries.
func (e *Engine) settleOutbox(ctx context.Context, answers []outboxAnswer) error {
	var definite []outboxAnswer
	var errs []error
	for _, a := range answers {
		if a.retry != nil {
			errs = append(errs, e.retryOutbox(ctx, a.row, a.retry))
			continue
		}
		definite = append(definite, a)
	}
	if len(definite) == 0 || e.recordOutbox(ctx, definite) == nil {
		return errors.Join(errs...)
	}
	for _, a := range definite {
		errs = append(errs, e.recordOutbox(ctx, []outboxAnswer{a}))
	}
	return errors.Join(errs...)
}

// claimOutbox takes due rows for one attempt each.
func (e *Engine) claimOutbox(ctx context.Context) ([]store.OutboxRow, error) {
	due, err := store.OutboxDue(ctx, e.pool, e.epoch.Load())
	if err != nil || !due {
		return nil, err
	}
	var out []store.OutboxRow
	err = e.withTx(ctx, func(tx *fence.Tx) (err error) {
		if out, err = store.ClaimOutbox(ctx, tx, outboxBatch, outboxLease, e.epoch.Load()); err != nil {
			return fmt.Errorf("claim outbox: %w", err)
		}
		return nil
	})
	return out, err
}

// performOutbox performs one row's keyed operation, as its kind does.
func (e *Engine) performOutbox(ctx context.Context, r store.OutboxRow) outboxAnswer {
	callCtx, cancel := context.WithTimeout(ctx, outboxCallTimeout)
	defer cancel()
	return outboxKindOf(r.Kind).perform(callCtx, e, r)
}

// retryOutbox schedules the row's next attempt with backoff.
func (e *Engine) retryOutbox(ctx context.Context, r store.OutboxRow, cause error) error {
	delay := harvest.RetryPolicy{InitialInterval: e.cfg.PollInterval / 4, MaxInterval: e.cfg.TaskRetryMax}.Backoff(r.Attempts)
	return e.withTx(ctx, func(tx *fence.Tx) error {
		return store.RetryOutbox(ctx, tx, r.ID, delay, cause.Error())
	})
}

// recordOutbox records definite answers in one fenced transaction: it
// locks their source runs, deletes their rows and, for each row it
// deleted (another attempt may have recorded it already), appends the
// outcome event to its run if it is still open, with a workflow task due.
func (e *Engine) recordOutbox(ctx context.Context, answers []outboxAnswer) error {
	ids := make([]uuid.UUID, len(answers))
	rowIDs := make([]int64, len(answers))
	for i, a := range answers {
		ids[i], rowIDs[i] = a.row.ExecutionID, a.row.ID
	}
	exs := make(map[uuid.UUID]*store.Exec, len(answers))
	deleted := make(map[int64]bool, len(answers))
	var ch *runs.Changes
	queue := func(b *pgx.Batch) {
		store.QueueLockExecs(b, ids, exs)
		store.QueueDeleteOutbox(b, rowIDs, func(id int64) { deleted[id] = true })
	}
	err := e.withFencedBatch(ctx, queue, func(tx *fence.Tx) error {
		b := &pgx.Batch{}
		ch = runs.New()
		ch.Ahead = tx.Ahead()
		for _, a := range answers {
			if !deleted[a.row.ID] {
				continue
			}
			ex := exs[a.row.ExecutionID]
			if err := outboxKindOf(a.row.Kind).record(b, ex, a); err != nil {
				return err
			}
			if ex != nil && !IsTerminal(ex.State) && a.outcome != nil {
				ch.AppendEvents(ex, []harvest.Command{*a.outcome}, true)
			}
		}
		ch.Queue(b)
		if err := e.crashAt(ctx, crashOutboxRecord); err != nil {
			return err
		}
		return tx.Send(ctx, b)
	})
	if err == nil {
		e.settle(ctx, ch.Effects(), nil)
	}
	return err
}

// failedOutcome is the failure event of a command refused for good.
func failedOutcome(t harvest.EventType, commandID string, answer error) *harvest.Command {
	c := harvest.NewCommand(t, harvest.OutboxFailedData{CommandID: commandID, Error: outboxErrorInfo(answer)})
	return &c
}

// outboxErrorInfo is the recorded form of a definite refusal, typed by
// what refused it.
func outboxErrorInfo(err error) harvest.ErrorInfo {
	info := harvest.ErrorInfo{Message: err.Error(), Type: "refused", NonRetryable: true}
	var (
		terminal *TerminalError
		conflict *ConflictError
		refused  *RefusedError
	)
	switch {
	case errors.As(err, &terminal):
		info.Type = "execution_terminal"
	case errors.As(err, &conflict):
		info.Type = "conflict"
	case errors.As(err, &refused):
		info.Type = refused.Code
	case errors.Is(err, ErrNotFound):
		info.Type = "not_found"
	case errors.Is(err, ErrUnknownWorkflow):
		info.Type = "unknown_workflow"
	case errors.Is(err, harvest.ErrUnknownSignal):
		info.Type = "unknown_signal"
	case errors.Is(err, harvest.ErrInvalidPayload):
		info.Type = "invalid_payload"
	}
	return info
}

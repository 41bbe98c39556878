package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest"
)

// The outbox (migration 011) holds the commands that act on other runs,
// each inserted by the transaction that records its cause:
//
//   - outboxSignal: a SignalExternalInitiated command; a keyed signal
//     (harvest.ExternalSignalKey), answered by ExternalSignalDelivered or
//     ExternalSignalFailed in the source run.
//   - outboxStartChild: a ChildWorkflowInitiated command; a keyed start
//     (harvest.ChildStartKey), answered by ChildWorkflowStarted or
//     ChildWorkflowStartFailed in the parent.
//   - outboxChildDone: a child's close, inserted with it; a keyed signal
//     (harvest.ChildDoneKey) of the system signal harvest.ChildClosedSignal
//     to the parent. Nothing is recorded back (the child is closed).
//   - outboxCloseChild: the parent close policy of one open child,
//     inserted with the parent's close; a terminate or a cancel request.
//
// The loop claims due rows (their due_at moves ahead by outboxLease: a
// crash retries after it, or at once when the lease changed hands: a claim
// stamps the epoch), performs each through Config.Outbound, and on a
// definite answer records it in one fenced transaction that locks the
// source run, appends the outcome event (waking the run's workflow task)
// and deletes the row; only a row that still exists is recorded, so one
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

// outboxRow is one claimed row.
type outboxRow struct {
	ID          int64
	ExecutionID uuid.UUID
	CommandID   string
	Kind        string
	Request     json.RawMessage
	Attempts    int
}

// outboxRows are the rows a write set inserts.
type outboxRows struct {
	commandIDs, kinds, requests []string
	execs                       []uuid.UUID
}

func (o *outboxRows) add(ex uuid.UUID, commandID, kind string, request any) error {
	raw, err := json.Marshal(request)
	if err != nil {
		return fmt.Errorf("encode outbox request: %w", err)
	}
	o.execs = append(o.execs, ex)
	o.commandIDs, o.kinds, o.requests = append(o.commandIDs, commandID), append(o.kinds, kind), append(o.requests, string(raw))
	return nil
}

func (o *outboxRows) queue(b *pgx.Batch) {
	if len(o.execs) == 0 {
		return
	}
	b.Queue(`
		INSERT INTO harvest_outbox (execution_id, command_id, kind, request)
		SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::jsonb[])
		ON CONFLICT DO NOTHING`, o.execs, o.commandIDs, o.kinds, o.requests)
}

// outboxLoop performs due outbox rows until ctx ends.
func (e *Engine) outboxLoop(ctx context.Context) {
	e.drainLoop(ctx, e.obWake, func(ctx context.Context) (bool, error) {
		n, err := e.runOutbox(ctx)
		return n == outboxBatch, err
	})
}

// runOutbox claims due rows and performs them concurrently.
func (e *Engine) runOutbox(ctx context.Context) (int, error) {
	rows, err := e.claimOutbox(ctx)
	if err != nil || len(rows) == 0 {
		return 0, err
	}
	if err := e.crashAt(ctx, crashOutboxClaimed); err != nil {
		return len(rows), err
	}
	var wg sync.WaitGroup
	errs := make([]error, len(rows))
	for i, r := range rows {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = e.performOutbox(ctx, r)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return len(rows), err
		}
	}
	return len(rows), nil
}

// outboxDue is the read-only look before a claim: most polls of a shard
// find nothing, and then cost one indexed read, not a fenced transaction.
const outboxDue = `
	SELECT EXISTS (SELECT 1 FROM harvest_outbox WHERE due_at <= now())
	    OR EXISTS (SELECT 1 FROM harvest_outbox WHERE claim_epoch < $1 AND attempts > 0)`

// claimOutbox takes due rows for one attempt each.
func (e *Engine) claimOutbox(ctx context.Context) ([]outboxRow, error) {
	var due bool
	if err := e.pool.QueryRow(ctx, outboxDue, e.epoch.Load()).Scan(&due); err != nil || !due {
		return nil, err
	}
	var out []outboxRow
	err := e.withTx(ctx, func(tx *fencedTx) error {
		rows, err := tx.Query(ctx, `
			WITH c AS (SELECT outbox_id FROM harvest_outbox
			            WHERE due_at <= now() OR (claim_epoch < $3 AND attempts > 0)
			            ORDER BY due_at LIMIT $1 FOR UPDATE SKIP LOCKED)
			UPDATE harvest_outbox o SET attempts = o.attempts + 1, due_at = now() + $2 * interval '1 millisecond',
			       claim_epoch = $3
			  FROM c WHERE o.outbox_id = c.outbox_id
			RETURNING o.outbox_id, o.execution_id, o.command_id, o.kind, o.request, o.attempts`,
			outboxBatch, outboxLease.Milliseconds(), e.epoch.Load())
		if err != nil {
			return fmt.Errorf("claim outbox: %w", err)
		}
		out, err = pgx.CollectRows(rows, pgx.RowToStructByPos[outboxRow])
		return err
	})
	return out, err
}

// performOutbox performs one row and records its answer, or schedules a
// retry.
func (e *Engine) performOutbox(ctx context.Context, r outboxRow) error {
	callCtx, cancel := context.WithTimeout(ctx, outboxCallTimeout)
	outcome, err := e.performKind(callCtx, r)
	cancel()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil && !IsDefinite(err) {
		e.log.Debug().Err(err).Str("execution_id", r.ExecutionID.String()).Str("kind", r.Kind).
			Int("attempt", r.Attempts).Msg("outbox attempt failed")
		return e.retryOutbox(ctx, r, err)
	}
	if err := e.crashAt(ctx, crashOutboxPerformed); err != nil {
		return err
	}
	return e.recordOutbox(ctx, r, outcome, err)
}

// performKind performs the row's keyed operation: the outcome event to
// append to the source run (none for kinds that record nothing).
func (e *Engine) performKind(ctx context.Context, r outboxRow) (*harvest.Command, error) {
	switch r.Kind {
	case outboxSignal:
		return e.performSignal(ctx, r)
	case outboxStartChild:
		return e.performStartChild(ctx, r)
	case outboxChildDone:
		return nil, e.performChildDone(ctx, r)
	case outboxCloseChild:
		return nil, e.performCloseChild(ctx, r)
	}
	return nil, fmt.Errorf("outbox row %d: unknown kind %q: %w", r.ID, r.Kind, ErrInvalidArgument)
}

// retryOutbox schedules the row's next attempt with backoff.
func (e *Engine) retryOutbox(ctx context.Context, r outboxRow, cause error) error {
	delay := harvest.RetryPolicy{InitialInterval: e.cfg.PollInterval / 4, MaxInterval: e.cfg.TaskRetryMax}.Backoff(r.Attempts)
	return e.withTx(ctx, func(tx *fencedTx) error {
		_, err := tx.Exec(ctx, `
			UPDATE harvest_outbox SET due_at = now() + $2 * interval '1 millisecond', last_error = $3
			 WHERE outbox_id = $1`, r.ID, delay.Milliseconds(), cause.Error())
		return err
	})
}

// recordOutbox records a definite answer: the outcome event in the
// source run (if it is still open and the row still exists) and the
// row's deletion, in one fenced transaction.
func (e *Engine) recordOutbox(ctx context.Context, r outboxRow, outcome *harvest.Command, answer error) error {
	woke := false
	err := e.withTx(ctx, func(tx *fencedTx) error {
		ex, err := lockExecution(ctx, tx, r.ExecutionID)
		if err != nil && !IsDefinite(err) {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM harvest_outbox WHERE outbox_id = $1`, r.ID)
		if err != nil || tag.RowsAffected() == 0 {
			return err // recorded by another attempt already
		}
		if r.Kind == outboxStartChild {
			if err := recordChildStart(ctx, tx, ex, r, outcome, answer); err != nil {
				return err
			}
		}
		if ex != nil && !IsTerminal(ex.State) && outcome != nil {
			woke = true
			if err := appendEvents(ctx, tx, ex, []harvest.Command{*outcome}, true); err != nil {
				return err
			}
		}
		return e.crashAt(ctx, crashOutboxRecord)
	})
	if err == nil && woke {
		e.nudge(e.wfWake)
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

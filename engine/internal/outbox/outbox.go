package outbox

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
	"github.com/harvestd/harvest/engine/internal/loop"
	"github.com/harvestd/harvest/engine/internal/runs"
	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
)

// The outbox (migration 011) holds the commands that act on other runs,
// each inserted by the transaction that records its cause; each kind is
// one entry of the Table (table.go): how its rows are performed and what
// their answers record.
//
// The loop claims due rows (their due_at moves ahead by lease: a crash
// retries after it, or at once when the lease changed hands: a claim
// stamps the epoch), performs each as its kind does through
// Deps.Outbound, and on a definite answer records it in one fenced
// transaction that locks the source run, appends the outcome event
// (waking the run's workflow task), queues what the kind records beside
// it and deletes the row; only a row that still exists is recorded, so one
// command gets one outcome event however many attempts ran. Other errors
// are retried with backoff. The keyed operation makes every retry land
// once on the target.

// The outbox's crash points (the engine's crashpoint.go lists every
// point in order).
const (
	// CrashClaimed: rows are claimed (committed), nothing performed.
	CrashClaimed loop.CrashPoint = "outbox.claimed"
	// CrashResolved: a signal to a workflow id resolved it to a run and
	// recorded that run in its row (committed); the signal is not sent.
	CrashResolved loop.CrashPoint = "outbox.resolved"
	// CrashPerformed: the keyed operation was answered, its outcome not
	// recorded yet.
	CrashPerformed loop.CrashPoint = "outbox.performed"
	// CrashRecord: the outcome is written, before its commit.
	CrashRecord loop.CrashPoint = "outbox.record_before_commit"
)

const (
	// batch is how many rows one pass claims.
	batch = 32
	// lease is how long a claimed row waits before another attempt (a
	// crash retries after it).
	lease = 30 * time.Second
	// callTimeout bounds one keyed operation.
	callTimeout = 20 * time.Second
)

// Outbox is the outbox loop.
type Outbox struct {
	d     Deps
	wake  chan struct{}
	kinds Table
}

// New makes the outbox loop, woken by wake, performing the kinds of
// kinds.
func New(d Deps, wake chan struct{}, kinds Table) *Outbox {
	return &Outbox{d: d, wake: wake, kinds: kinds}
}

// Run performs due outbox rows until ctx ends.
func (o *Outbox) Run(ctx context.Context) {
	loop.Drain(ctx, o.wake, o.d.Poll, o.d.Log, func(ctx context.Context) (bool, error) {
		n, err := o.runDue(ctx)
		return n == batch, err
	})
}

// runDue claims due rows, performs them concurrently and records their
// answers in one transaction.
func (o *Outbox) runDue(ctx context.Context) (int, error) {
	rows, err := o.claim(ctx)
	if err != nil || len(rows) == 0 {
		return 0, err
	}
	if err := o.d.Crash.At(ctx, CrashClaimed); err != nil {
		return len(rows), err
	}
	answers := o.performAll(ctx, rows)
	if ctx.Err() != nil {
		return len(rows), ctx.Err()
	}
	if err := o.d.Crash.At(ctx, CrashPerformed); err != nil {
		return len(rows), err
	}
	return len(rows), o.settle(ctx, answers)
}

// performAll performs the rows concurrently and returns their answers.
func (o *Outbox) performAll(ctx context.Context, rows []store.OutboxRow) []Answer {
	answers := make([]Answer, len(rows))
	var wg sync.WaitGroup
	for i, r := range rows {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = o.perform(ctx, r)
		}()
	}
	wg.Wait()
	return answers
}

// Answer is what one attempt of a row got: the outcome event to append
// (nil for none), the definite error, or a retry.
type Answer struct {
	row     store.OutboxRow
	outcome *harvest.Command
	answer  error
	retry   error
	// fire is a keyed start's answer (KeyedStart kinds only).
	fire *fireAnswer
}

// settle records the definite answers in one transaction (one at a time
// if that fails) and schedules the retries.
func (o *Outbox) settle(ctx context.Context, answers []Answer) error {
	var definite []Answer
	var errs []error
	for _, a := range answers {
		if a.retry != nil {
			errs = append(errs, o.retry(ctx, a.row, a.retry))
			continue
		}
		definite = append(definite, a)
	}
	if len(definite) == 0 || o.record(ctx, definite) == nil {
		return errors.Join(errs...)
	}
	for _, a := range definite {
		errs = append(errs, o.record(ctx, []Answer{a}))
	}
	return errors.Join(errs...)
}

// claim takes due rows for one attempt each.
func (o *Outbox) claim(ctx context.Context) ([]store.OutboxRow, error) {
	due, err := store.OutboxDue(ctx, o.d.Pool, o.d.Fence.Epoch.Load())
	if err != nil || !due {
		return nil, err
	}
	var out []store.OutboxRow
	err = o.d.Fence.Do(ctx, func(tx *fence.Tx) (err error) {
		if out, err = store.ClaimOutbox(ctx, tx, batch, lease, o.d.Fence.Epoch.Load()); err != nil {
			return fmt.Errorf("claim outbox: %w", err)
		}
		return nil
	})
	return out, err
}

// perform performs one row's keyed operation, as its kind does.
func (o *Outbox) perform(ctx context.Context, r store.OutboxRow) Answer {
	callCtx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	return o.kinds.Of(r.Kind).Perform(callCtx, o.d, r)
}

// retry schedules the row's next attempt with backoff.
func (o *Outbox) retry(ctx context.Context, r store.OutboxRow, cause error) error {
	delay := harvest.RetryPolicy{InitialInterval: o.d.Poll / 4, MaxInterval: o.d.RetryMax}.Backoff(r.Attempts)
	return o.d.Fence.Do(ctx, func(tx *fence.Tx) error {
		return store.RetryOutbox(ctx, tx, r.ID, delay, cause.Error())
	})
}

// record records definite answers in one fenced transaction: it locks
// their source runs, deletes their rows and, for each row it deleted
// (another attempt may have recorded it already), appends the outcome
// event to its run if it is still open, with a workflow task due.
func (o *Outbox) record(ctx context.Context, answers []Answer) error {
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
	err := o.d.Fence.DoBatch(ctx, queue, func(tx *fence.Tx) (err error) {
		ch, err = o.recordTx(ctx, tx, answers, exs, deleted)
		return err
	})
	if err == nil {
		o.d.Settle(ctx, ch.Effects(), nil)
	}
	return err
}

// recordTx is record's transaction once the runs are locked and the rows
// deleted: it queues each deleted row's records and sends them.
func (o *Outbox) recordTx(ctx context.Context, tx *fence.Tx, answers []Answer, exs map[uuid.UUID]*store.Exec,
	deleted map[int64]bool) (*runs.Changes, error) {
	b := &pgx.Batch{}
	ch := runs.New()
	ch.Ahead = tx.Ahead()
	for _, a := range answers {
		if !deleted[a.row.ID] {
			continue
		}
		ex := exs[a.row.ExecutionID]
		if err := o.kinds.Of(a.row.Kind).Record(b, ex, a); err != nil {
			return ch, err
		}
		if ex != nil && !shardapi.IsTerminal(ex.State) && a.outcome != nil {
			ch.AppendEvents(ex, []harvest.Command{*a.outcome}, true)
		}
	}
	ch.Queue(b)
	if err := o.d.Crash.At(ctx, CrashRecord); err != nil {
		return ch, err
	}
	return ch, tx.Send(ctx, b)
}

package maint

import (
	"context"
	"errors"
	"fmt"
	"strings"
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

// The timer loop's crash points (the engine's crashpoint.go lists every
// point in order).
const (
	// CrashTimerFire: a timer fire before its commit.
	CrashTimerFire loop.CrashPoint = "timer_fire.before_commit"
	// CrashTimeoutFire: a workflow timeout fire before its commit.
	CrashTimeoutFire loop.CrashPoint = "timeout_fire.before_commit"
)

// timerBatch is how many due timers one pass fires.
const timerBatch = 100

// Timers fires due durable timers (workflow time), each in its own
// transaction that locks the run before the timer row: a timer of
// workflow code appends TimerFired and makes a workflow task due; a
// workflow timeout's timer closes the run TIMED_OUT (timeouts.go).
// Besides nudges on its wake channel and the poll tick, it wakes when the
// next pending timer is due (a loop.Wakeup armed after each pass).
type Timers struct {
	d    Deps
	wake chan struct{}
	next *loop.Wakeup
}

// NewTimers makes the timer loop, woken by wake.
func NewTimers(d Deps, wake chan struct{}) *Timers {
	return &Timers{d: d, wake: wake, next: loop.NewWakeup(func() { loop.Nudge(wake) })}
}

// Run fires due timers until ctx ends.
func (t *Timers) Run(ctx context.Context) {
	defer t.next.Stop()
	loop.Drain(ctx, t.wake, t.d.Poll, t.d.Log, t.FireDue)
}

// FireDue fires up to timerBatch due timers; more says the batch was full.
func (t *Timers) FireDue(ctx context.Context) (more bool, err error) {
	due, err := store.DueTimers(ctx, t.d.Pool, timerBatch, t.d.Ahead().Microseconds())
	if err != nil {
		return false, fmt.Errorf("find due timers: %w", err)
	}
	for i, d := range due {
		if err := t.fire(ctx, d); err != nil {
			return i > 0, err
		}
	}
	t.armNext(ctx)
	return len(due) == timerBatch, nil
}

// fire fires one timer, unless another pass did (its row is gone) or its
// run closed, and settles what the fire asks of the engine.
func (t *Timers) fire(ctx context.Context, d store.DueTimer) error {
	var fx runs.Effects
	err := t.d.Fence.Do(ctx, func(tx *fence.Tx) error {
		var err error
		fx, err = t.fireTx(ctx, tx, d)
		return err
	})
	if err != nil {
		return err
	}
	t.d.Settle(ctx, fx, nil)
	return nil
}

// fireTx is fire's transaction.
func (t *Timers) fireTx(ctx context.Context, tx *fence.Tx, d store.DueTimer) (runs.Effects, error) {
	ex, err := store.LockExec(ctx, tx, d.ExecutionID)
	if errors.Is(err, shardapi.ErrNotFound) {
		return runs.Effects{}, nil
	}
	if err != nil {
		return runs.Effects{}, err
	}
	fireAt, err := store.DeleteTimer(ctx, tx, d.ExecutionID, d.TimerID)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && shardapi.IsTerminal(ex.State)) {
		return runs.Effects{}, nil
	}
	if err != nil {
		return runs.Effects{}, fmt.Errorf("delete timer: %w", err)
	}
	ch := runs.New()
	point := CrashTimerFire
	if kind := TimeoutKind(d.TimerID); kind != "" {
		point = CrashTimeoutFire
		err = timeOut(ctx, tx, ch, ex, kind, fireAt)
	} else {
		ch.AppendEvents(ex, []harvest.Command{harvest.NewCommand(harvest.EventTimerFired, harvest.TimerFiredData{TimerID: d.TimerID})}, true)
	}
	if err != nil {
		return runs.Effects{}, err
	}
	if err := ch.Send(ctx, tx, &pgx.Batch{}); err != nil {
		return runs.Effects{}, err
	}
	return ch.Effects(), t.d.Crash.At(ctx, point)
}

// armNext arms the wake-up for the earliest pending timer when it is due
// sooner than the next poll tick.
func (t *Timers) armNext(ctx context.Context) {
	in, err := store.NextTimerIn(ctx, t.d.Pool, t.d.Ahead().Microseconds())
	if err != nil || in == nil {
		return
	}
	if wait := time.Duration(*in * float64(time.Second)); wait > 0 && wait < t.d.Poll {
		t.next.After(wait)
	}
}

// timeOut adds to ch the close of the locked run TIMED_OUT for its
// timeout timer of kind that was due at fireAt. An execution timeout is
// measured from the start of the run's continue-as-new chain (its first
// run, while its history is kept), a run timeout from the run's own.
func timeOut(ctx context.Context, tx *fence.Tx, ch *runs.Changes, ex *store.Exec, kind string, fireAt time.Time) error {
	from := ex.ID
	if kind == runs.TimeoutExecution && ex.ChainID != uuid.Nil {
		from = ex.ChainID
	}
	started, err := store.ChainStart(ctx, tx, ex.ID, from)
	if err != nil {
		return fmt.Errorf("read start of %s: %w", ex.ID, store.Translate(err))
	}
	return runs.TimeOut(ch, ex, kind, fireAt.Sub(started))
}

// TimeoutKind is the kind of a workflow timeout's timer id ("" for a
// timer of workflow code).
func TimeoutKind(timerID string) string {
	kind, ok := strings.CutPrefix(timerID, runs.TimeoutTimerPrefix)
	if !ok {
		return ""
	}
	return kind
}

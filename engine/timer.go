package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/fence"
	"github.com/harvestd/harvest/engine/internal/runs"
	"github.com/harvestd/harvest/engine/internal/store"
)

// timerBatch is how many due timers one pass fires.
const timerBatch = 100

// timerLoop fires due timers (workflow time, see clock.go) until ctx
// ends. Besides nudges and the poll tick it wakes when the next known
// timer is due, and when the clock advances.
func (e *Engine) timerLoop(ctx context.Context) {
	e.drainLoop(ctx, e.tmWake, e.fireDueTimers)
}

// fireDueTimers fires up to timerBatch due timers, each in its own
// transaction that locks the execution before the timer row.
func (e *Engine) fireDueTimers(ctx context.Context) (bool, error) {
	due, err := store.DueTimers(ctx, e.pool, timerBatch, micros(e.ahead()))
	if err != nil {
		return false, fmt.Errorf("find due timers: %w", err)
	}
	fired := 0
	for _, d := range due {
		ok, _, err := e.fireTimer(ctx, d)
		if err != nil {
			return fired > 0, err
		}
		if ok {
			fired++
		}
	}
	e.armNextTimer(ctx)
	return len(due) == timerBatch, nil
}

func (e *Engine) fireTimer(ctx context.Context, d store.DueTimer) (fired, closed bool, err error) {
	var fx runs.Effects
	err = e.withTx(ctx, func(tx *fence.Tx) error {
		fx, fired, closed = runs.Effects{}, false, false
		ex, err := store.LockExec(ctx, tx, d.ExecutionID)
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		fireAt, err := store.DeleteTimer(ctx, tx, d.ExecutionID, d.TimerID)
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && IsTerminal(ex.State)) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("delete timer: %w", err)
		}
		if kind := timeoutKind(d.TimerID); kind != "" {
			closed = true
			if fx, err = fireTimeout(ctx, tx, ex, kind, fireAt); err != nil {
				return err
			}
			return e.crashAt(ctx, crashTimeoutFire)
		}
		fired = true
		ch := runs.New()
		ch.AppendEvents(ex, []harvest.Command{harvest.NewCommand(harvest.EventTimerFired, harvest.TimerFiredData{TimerID: d.TimerID})}, true)
		if err := ch.Send(ctx, tx, &pgx.Batch{}); err != nil {
			return err
		}
		fx = ch.Effects()
		return e.crashAt(ctx, crashTimerFire)
	})
	if err != nil {
		return false, false, err
	}
	e.settle(ctx, fx, nil)
	return fired, closed, nil
}

// armNextTimer nudges the timer loop when the earliest pending timer is
// due sooner than the next poll tick.
func (e *Engine) armNextTimer(ctx context.Context) {
	in, err := store.NextTimerIn(ctx, e.pool, micros(e.ahead()))
	if err != nil || in == nil {
		return
	}
	wait := time.Duration(*in * float64(time.Second))
	if wait <= 0 || wait >= e.cfg.PollInterval {
		return
	}
	time.AfterFunc(wait, func() { e.nudge(e.tmWake) })
}

package activity

import (
	"context"
	"errors"
	"time"

	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
)

// Recording an attempt's outcome survives a database blip.
//
// Once an attempt's code has returned, its outcome lives only in this
// process until a transaction records it. If that transaction fails (the
// database restarts, a connection drops) and the outcome were dropped, the
// task would stay running until its lock expires (start-to-close plus
// store.LeaseGrace: ten minutes and more by default) and its run would stall that
// long. retryRecord retries the record with backoff for as long as the
// attempt's lock holds. It stops at once when the engine stops or the
// shard's lease is lost: the next owner reclaims the attempt, as after a
// crash. Recording is idempotent: a retry of a record that did commit finds
// the attempt no longer current and writes nothing.

const (
	// outcomeRetryFirst is the first pause before recording again.
	outcomeRetryFirst = 50 * time.Millisecond
	// outcomeRetryMax caps the pause, which doubles each time.
	outcomeRetryMax = 2 * time.Second
)

// retryRecord runs record until it succeeds, fails for good, or the
// attempt's lock would expire before the next try.
func (a *Attempts) retryRecord(ctx context.Context, t Task, record func(context.Context) (attemptOutcome, error)) (attemptOutcome, error) {
	until := attemptLockExpiry(t)
	pause := outcomeRetryFirst
	for {
		res, err := record(ctx)
		if err == nil || !retryableRecord(err) || time.Now().Add(pause).After(until) {
			return res, err
		}
		a.d.Log.Debug().Err(err).Str("execution_id", t.ExecutionID.String()).Str("activity_id", t.ActivityID).
			Msg("record activity outcome failed, retrying")
		if !sleepCtx(ctx, pause) {
			return res, err
		}
		pause = min(2*pause, outcomeRetryMax)
	}
}

// attemptLockExpiry is when the attempt's lock expires by this node's
// clock: the claim's locked_until counts start-to-close plus store.LeaseGrace
// from the claim, which came after t.Since.
func attemptLockExpiry(t Task) time.Time {
	since := t.Since
	if since.IsZero() {
		since = time.Now()
	}
	return since.Add(t.Options.WithDefaults().StartToClose + store.LeaseGrace)
}

// retryableRecord is false for the errors another try cannot fix: the
// engine stopping or the lease lost.
func retryableRecord(err error) bool {
	var lost *shardapi.OwnershipLostError
	return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) &&
		!errors.As(err, &lost) && !errors.Is(err, shardapi.ErrNotRunning)
}

// sleepCtx waits d; false if ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

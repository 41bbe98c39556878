package activity

import (
	"context"
	"sync/atomic"
	"time"
)

// attemptClock cancels an activity attempt whose timeouts a clock that
// jumps ahead has passed: the attempt's deadline and heartbeat watchdog
// run on real time (attemptContext), which an advance overtakes. With the
// real clock there is none.
type attemptClock struct {
	a        *Attempts
	deadline time.Time // workflow time
	cause    error
	hb       time.Duration // heartbeat timeout (0: none)
	beat     atomic.Int64  // workflow time of the last heartbeat, Unix ns
}

// newAttemptClock watches deadline (real time, as attemptContext sets it)
// on workflow time; nil with a clock that never advances.
func (a *Attempts) newAttemptClock(deadline time.Time, cause error, hb time.Duration) *attemptClock {
	if a.d.Clock.Advanced() == nil {
		return nil
	}
	c := &attemptClock{a: a, deadline: deadline.Add(a.d.Ahead()), cause: cause, hb: hb}
	c.heartbeat()
	return c
}

// heartbeat restarts the heartbeat timeout.
func (c *attemptClock) heartbeat() { c.beat.Store(c.a.d.Now().UnixNano()) }

// run cancels the attempt when an advance passes one of its timeouts;
// it returns when it did or when ctx ends.
func (c *attemptClock) run(ctx context.Context, cancel context.CancelCauseFunc) {
	for {
		ch := c.a.d.Clock.Advanced() // before the check: no advance is missed
		if cause := c.passed(c.a.d.Now()); cause != nil {
			cancel(cause)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-ch:
		}
	}
}

// passed is the cause of the first timeout passed at now, or nil.
func (c *attemptClock) passed(now time.Time) error {
	if !now.Before(c.deadline) {
		return c.cause
	}
	if c.hb > 0 && !now.Before(time.Unix(0, c.beat.Load()).Add(c.hb)) {
		return errHeartbeat
	}
	return nil
}

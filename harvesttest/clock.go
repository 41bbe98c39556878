package harvesttest

import (
	"sync"
	"time"

	"github.com/harvestd/harvest/engine"
)

// Clock is a test clock: the workflow time of an Env's engine, which runs
// ahead of real time by however far the test advanced it. Real time keeps
// passing under it; Advance jumps it forward and wakes the engine, so that
// timers, signal timeouts, activity retries and activity timeouts that
// come due fire at once. It only goes forward. It implements engine.Clock
// and is safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	off time.Duration
	adv chan struct{} // closed by the next Advance
}

var _ engine.Clock = (*Clock)(nil)

// NewClock returns a clock at real time (no offset yet).
func NewClock() *Clock { return &Clock{adv: make(chan struct{})} }

// Now is the current workflow time: real time plus the advances so far.
func (c *Clock) Now() time.Time { return time.Now().Add(c.Offset()) }

// Offset is how far the clock runs ahead of real time.
func (c *Clock) Offset() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.off
}

// Advanced returns a channel closed by the next Advance.
func (c *Clock) Advanced() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.adv
}

// Advance moves the clock d ahead (to the microsecond, the database's
// precision) and returns the new workflow time. A d that is not positive
// changes nothing.
func (c *Clock) Advance(d time.Duration) time.Time {
	d = d.Truncate(time.Microsecond)
	if d <= 0 {
		return c.Now()
	}
	c.mu.Lock()
	c.off += d
	close(c.adv)
	c.adv = make(chan struct{})
	c.mu.Unlock()
	return c.Now()
}

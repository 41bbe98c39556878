package fence

import (
	"sync"
	"time"
)

// Clock estimates the database's clock from the node's, for the start
// batches that must know their transaction's time before they send it
// (internal/intake/one_trip.go).
//
// A sample is a statement's now() less the node's time just before the
// statement was sent: the clocks' offset plus the time the statement took
// to reach the server, so never less than the offset. The estimate is the
// least sample of the current window of clockWindow samples and of the one
// before it: it follows a clock that steps back at once, and one that steps
// forward within two windows.
type Clock struct {
	mu        sync.Mutex
	cur, prev time.Duration
	n         int  // samples in the current window
	hasPrev   bool // a window has ended
}

// clockWindow is the number of samples of a window.
const clockWindow = 256

// Observe records that a statement sent at sent (the node's time) saw
// now() = db.
func (c *Clock) Observe(sent, db time.Time) {
	d := db.Sub(sent.Round(0))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == 0 || d < c.cur {
		c.cur = d
	}
	c.n++
	if c.n == clockWindow {
		c.prev, c.hasPrev, c.n = c.cur, true, 0
	}
}

// Measured says whether there is a sample.
func (c *Clock) Measured() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n > 0 || c.hasPrev
}

// At is the database's time now by the estimate, less lead, to the
// microsecond (the database's precision); ok is false before any sample.
func (c *Clock) At(lead time.Duration) (t time.Time, ok bool) {
	c.mu.Lock()
	off, ok := c.cur, c.n > 0
	if c.hasPrev && (!ok || c.prev < off) {
		off, ok = c.prev, true
	}
	c.mu.Unlock()
	if !ok {
		return time.Time{}, false
	}
	return time.Now().Round(0).Add(off - lead).Truncate(time.Microsecond), true
}

// Force sets the estimate to offset, as one sample in a fresh window: for
// tests that need a known clock.
func (c *Clock) Force(offset time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cur, c.n, c.hasPrev = offset, 1, false
}

// Forget drops every sample: the clock is unmeasured again.
func (c *Clock) Forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n, c.hasPrev = 0, false
}

package loop

import (
	"context"
	"time"

	"github.com/rs/zerolog"
)

// Poller wakes a service loop: on a nudge of its channel, on the poll
// tick, and at the times it was armed for (a Wakeup) when work comes due
// between two ticks.
type Poller struct {
	wake  chan struct{}
	every time.Duration
	log   zerolog.Logger
	next  *Wakeup
}

// NewPoller makes the poller of a loop woken by wake, polling every.
func NewPoller(wake chan struct{}, every time.Duration, log zerolog.Logger) *Poller {
	return &Poller{wake: wake, every: every, log: log, next: NewWakeup(func() { Nudge(wake) })}
}

// Run calls step as Drain does until ctx ends, then drops the times
// armed.
func (p *Poller) Run(ctx context.Context, step func(context.Context) (bool, error)) {
	defer p.next.Stop()
	Drain(ctx, p.wake, p.every, p.log, step)
}

// Nudge wakes the loop now.
func (p *Poller) Nudge() { Nudge(p.wake) }

// ArmIn wakes the loop in wait when that comes before the next poll tick
// (and is not past).
func (p *Poller) ArmIn(wait time.Duration) {
	if wait > 0 && wait < p.every {
		p.next.After(wait)
	}
}

package schedule

import (
	"context"

	"github.com/harvestd/harvest/engine/internal/loop"
	"github.com/harvestd/harvest/engine/internal/runs"
)

// Deps is what the schedules use; the engine fills it. The fire loop
// wakes the outbox through Settle.
type Deps struct {
	runs.Service
	// HasWorkflow reports whether the registry runs a workflow.
	HasWorkflow func(name string) bool
}

// Schedules is the shard's schedules: their operations and the fire loop.
type Schedules struct {
	d Deps
	// poll wakes the fire loop, also when the earliest schedule is due
	// between two polls.
	poll *loop.Poller
}

// New makes the schedules, their fire loop woken by wake.
func New(d Deps, wake chan struct{}) *Schedules {
	return &Schedules{d: d, poll: loop.NewPoller(wake, d.Poll, d.Log)}
}

// Run fires due schedules until ctx ends.
func (x *Schedules) Run(ctx context.Context) { x.poll.Run(ctx, x.fireDue) }

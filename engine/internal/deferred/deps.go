package deferred

import (
	"context"

	"github.com/harvestd/harvest/engine/internal/fence"
	"github.com/harvestd/harvest/engine/internal/loop"
	"github.com/harvestd/harvest/engine/internal/runs"
)

// Deps is what the deferred starts use; the engine fills it. Its Fence
// also says whether the shard is owned; the fire loop wakes the outbox
// through Settle.
type Deps struct {
	runs.Service
	// HasWorkflow reports whether the registry runs a workflow.
	HasWorkflow func(name string) bool
	// ShardID is the shard new items' ids are minted on.
	ShardID uint16
	// BatchInputBytes bounds the inputs one batch gathers.
	BatchInputBytes int64
	// AfterClose, when set (tests), runs after a start closes a full
	// batch to make room, in its transaction.
	AfterClose func(context.Context, *fence.Tx) error
}

// Starts is the shard's deferred starts: their requests and the fire
// loop.
type Starts struct {
	d Deps
	// poll wakes the fire loop, also when an item is due between two
	// polls.
	poll *loop.Poller
}

// New makes the deferred starts, their fire loop woken by wake.
func New(d Deps, wake chan struct{}) *Starts {
	return &Starts{d: d, poll: loop.NewPoller(wake, d.Poll, d.Log)}
}

// Run fires due deferred items until ctx ends.
func (x *Starts) Run(ctx context.Context) { x.poll.Run(ctx, x.fireDue) }

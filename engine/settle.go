package engine

import (
	"context"

	"github.com/harvestd/harvest/engine/internal/runs"
)

// settle is the one place the engine acts on a batch's changes once its
// transaction ended (err nil: committed): it runs or gives back the
// activity tasks dispatched directly (activity.Attempts.SettleTasks, also
// after a failure),
// and after a commit answers the waiters of the runs it closed and wakes
// the loops that have work. ctx is the engine's run: dispatched attempts
// outlive the batch.
func (e *Engine) settle(ctx context.Context, fx runs.Effects, err error) {
	e.act.SettleTasks(ctx, fx, err)
	if err != nil {
		return
	}
	if len(fx.Closed) > 0 {
		e.closed.FireWith(fx.Outcomes, fx.Closed...)
	}
	e.settleFlow(fx)
	e.bus.Wake(fx.Wake)
}

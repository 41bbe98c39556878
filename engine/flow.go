package engine

import (
	"context"
	"maps"
	"slices"

	"github.com/harvestd/harvest/engine/internal/flow"
	"github.com/harvestd/harvest/engine/internal/intake"
	"github.com/harvestd/harvest/engine/internal/loop"
	"github.com/harvestd/harvest/engine/internal/runs"
	"github.com/harvestd/harvest/engine/internal/store"
)

// Occupancy is one concurrency key's use of its limit: the runs holding
// a slot and the runs queued for one.
type Occupancy = store.Occupancy

// newFlow makes the flow dispatcher (internal/flow) with its Deps. The
// limits are the registry's as the engine is made.
func (e *Engine) newFlow() {
	e.limited = len(e.reg.LimitedWorkflows()) > 0
	e.flow = flow.New(flow.Deps{Service: e.service("flow"), Limits: e.limits}, e.bus.Flow)
}

// limits are the concurrency limits the registry's workflows declare.
func (e *Engine) limits() store.Limits {
	var lim store.Limits
	decl := e.reg.LimitedWorkflows()
	for _, name := range slices.Sorted(maps.Keys(decl)) {
		lim.Names, lim.Max = append(lim.Names, name), append(lim.Max, int32(decl[name].MaxRunning))
	}
	return lim
}

// settleFlow wakes the flow dispatcher for a commit that queued runs,
// or that closed runs while some workflow is limited (a closed run may
// have freed a slot).
func (e *Engine) settleFlow(fx runs.Effects) {
	switch {
	case fx.Wake.Has(loop.Flow):
		e.flow.Queued()
	case len(fx.Closed) > 0 && e.limited:
		e.flow.Freed()
	}
}

// Occupancy reads the shard's concurrency keys in use: per workflow
// name and key, the runs running and queued.
func (e *Engine) Occupancy(ctx context.Context) ([]Occupancy, error) {
	return store.FlowOccupancy(ctx, e.pool)
}

// MaxFlowKeyBytes bounds a start's concurrency and fairness keys.
const MaxFlowKeyBytes = intake.MaxFlowKeyBytes

package engine

import (
	"context"
	"fmt"
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

// FlowLimit is a workflow's concurrency limit as the shard applies it.
type FlowLimit struct {
	WorkflowName string `json:"workflow_name"`
	MaxRunning   int    `json:"max_running"`
	KeyPointer   string `json:"key_pointer,omitempty"`
}

// FlowStatus is a shard's flow control: the limits it applies, and its
// concurrency keys in use (per workflow name and key, the runs running
// and queued).
type FlowStatus struct {
	Limits []FlowLimit `json:"limits"`
	Keys   []Occupancy `json:"keys"`
}

// FlowStatus reads the shard's flow control.
func (e *Engine) FlowStatus(ctx context.Context) (FlowStatus, error) {
	keys, err := store.FlowOccupancy(ctx, e.pool)
	if err != nil {
		return FlowStatus{}, fmt.Errorf("read flow occupancy: %w", err)
	}
	st := FlowStatus{Limits: []FlowLimit{}, Keys: keys}
	decl := e.reg.LimitedWorkflows()
	for _, name := range slices.Sorted(maps.Keys(decl)) {
		st.Limits = append(st.Limits, FlowLimit{WorkflowName: name, MaxRunning: decl[name].MaxRunning, KeyPointer: decl[name].KeyPointer})
	}
	if st.Keys == nil {
		st.Keys = []Occupancy{}
	}
	return st, nil
}

// MaxFlowKeyBytes bounds a start's concurrency and fairness keys.
const MaxFlowKeyBytes = intake.MaxFlowKeyBytes

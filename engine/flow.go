package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/flow"
	"github.com/harvestd/harvest/engine/internal/intake"
	"github.com/harvestd/harvest/engine/internal/limits"
	"github.com/harvestd/harvest/engine/internal/loop"
	"github.com/harvestd/harvest/engine/internal/runs"
	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/internal/flowkeeper"
)

// Occupancy is one concurrency key's use of its limit: the runs holding
// a slot and the runs queued for one.
type Occupancy = store.Occupancy

// newFlow makes the flow dispatcher (internal/flow) with its Deps; the
// limits are the registry's, read as they are needed.
func (e *Engine) newFlow() {
	e.flow = flow.New(flow.Deps{Service: e.service("flow"), Limits: e.limits}, e.bus.Flow)
}

// registerKeeper registers the keeper of the limits counted across the
// cluster (internal/flowkeeper) in reg, unless it is there already (the
// engines of a node's shards share one registry): any limit may be given
// that scope at run time, so every node runs it.
func registerKeeper(reg *harvest.Registry) error {
	if reg.HasWorkflow(flowkeeper.WorkflowName) {
		return nil
	}
	if err := reg.Register(flowkeeper.Workflow); err != nil && !reg.HasWorkflow(flowkeeper.WorkflowName) {
		return fmt.Errorf("register the flow keeper: %w", err)
	}
	return nil
}

// limits are the concurrency limits the registry's workflows declare,
// as the dispatcher's statement takes them.
func (e *Engine) limits() store.Limits {
	var lim store.Limits
	for _, l := range e.flowLimits() {
		tokens, _ := harvest.ParsePointer(l.KeyPointer) // checked when the limit was declared or set
		if l.Scope == harvest.ScopeCluster {
			lim.Cluster, lim.ClusterMax = append(lim.Cluster, l.WorkflowName), append(lim.ClusterMax, int32(l.MaxRunning))
			lim.ClusterPaths = append(lim.ClusterPaths, store.PointerPath(tokens))
			continue
		}
		lim.Names, lim.Max = append(lim.Names, l.WorkflowName), append(lim.Max, int32(l.MaxRunning))
		lim.Paths = append(lim.Paths, store.PointerPath(tokens))
	}
	return lim
}

// flowLimits are the concurrency limits the registry's workflows
// declare, by workflow name.
func (e *Engine) flowLimits() []FlowLimit {
	decl := e.lim.Workflows()
	out := make([]FlowLimit, 0, len(decl))
	for _, name := range slices.Sorted(maps.Keys(decl)) {
		l := decl[name]
		out = append(out, FlowLimit{WorkflowName: name, MaxRunning: l.MaxRunning, KeyPointer: l.KeyPointer, Scope: l.Scope})
	}
	return out
}

// settleFlow wakes the flow dispatcher for a commit that queued runs,
// or that closed runs while some workflow is limited (a closed run may
// have freed a slot).
func (e *Engine) settleFlow(fx runs.Effects) {
	switch {
	case fx.Wake.Has(loop.Flow):
		e.flow.Queued()
	case len(fx.Closed) > 0 && e.lim.AnyWorkflow():
		e.flow.Freed()
	}
}

// FlowLimit is a workflow's concurrency limit as the shard applies it.
type FlowLimit struct {
	WorkflowName string `json:"workflow_name"`
	MaxRunning   int    `json:"max_running"`
	KeyPointer   string `json:"key_pointer,omitempty"`
	// Scope is where the slots are counted: "cluster", or "shard" (also
	// "") (harvest.ConcurrencyLimit.Scope).
	Scope string `json:"scope,omitempty"`
}

// FlowStatus is a shard's flow control: the limits it applies, and its
// concurrency keys in use (per workflow name and key, the runs running
// and queued).
type FlowStatus struct {
	Limits []FlowLimit `json:"limits"`
	Keys   []Occupancy `json:"keys"`
	// ActivityLimits and Activities are the same for activities: per
	// activity name and key, the attempts holding a slot and the tasks
	// waiting.
	ActivityLimits []ActivityFlowLimit `json:"activity_limits"`
	Activities     []ActivityOccupancy `json:"activities"`
}

// ActivityFlowLimit is an activity's concurrency limit (MaxRunning 0:
// none) and rate limit (PerSecond 0: none).
type ActivityFlowLimit struct {
	ActivityName   string  `json:"activity_name"`
	MaxRunning     int     `json:"max_running"`
	KeyPointer     string  `json:"key_pointer,omitempty"`
	PerSecond      float64 `json:"per_second,omitempty"`
	Burst          int     `json:"burst,omitempty"`
	RateKeyPointer string  `json:"rate_key_pointer,omitempty"`
}

// ActivityOccupancy is one activity key's use of its limit.
type ActivityOccupancy = store.ActivityOccupancy

// FlowStatus reads the shard's flow control.
func (e *Engine) FlowStatus(ctx context.Context) (FlowStatus, error) {
	keys, err := store.FlowOccupancy(ctx, e.pool)
	if err != nil {
		return FlowStatus{}, fmt.Errorf("read flow occupancy: %w", err)
	}
	acts, err := store.ActivityFlowOccupancy(ctx, e.pool, e.act.ConcurrencyLimits())
	if err != nil {
		return FlowStatus{}, fmt.Errorf("read activity flow occupancy: %w", err)
	}
	return FlowStatus{Limits: e.flowLimits(), Keys: orEmpty(keys), ActivityLimits: e.activityLimits(),
		Activities: orEmpty(acts)}, nil
}

// activityLimits are the concurrency and rate limits the registry's
// activities declare, by activity name.
func (e *Engine) activityLimits() []ActivityFlowLimit {
	names, conc, rate := e.lim.ActivityNames()
	out := make([]ActivityFlowLimit, 0, len(names))
	for _, name := range names {
		c, r := conc[name], rate[name]
		l := ActivityFlowLimit{ActivityName: name, MaxRunning: c.MaxRunning, KeyPointer: c.KeyPointer}
		if r.Limited() {
			l.PerSecond, l.Burst, l.RateKeyPointer = r.PerSecond, r.BurstOrDefault(), r.KeyPointer
		}
		out = append(out, l)
	}
	return out
}

// orEmpty is s, or an empty slice for nil (JSON [] rather than null).
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// MaxFlowKeyBytes bounds a start's concurrency and fairness keys.
const MaxFlowKeyBytes = intake.MaxFlowKeyBytes

// RuntimeLimits are flow control limits set at run time (Config.Limits),
// by workflow or activity name.
type RuntimeLimits = limits.Runtime

// Package limits is the engine's one view of the flow control limits in
// force: those the registry's workflows and activities declare in code,
// overridden name by name by those set at run time (the cluster's
// /admin/limits, replicated by raft). A limit set at run time replaces
// the declared one of its name whole; a zero one set at run time lifts
// it.
package limits

import (
	"maps"
	"slices"

	"github.com/harvestd/harvest"
)

// Runtime are limits set at run time, by workflow or activity name.
type Runtime struct {
	Workflows  map[string]harvest.ConcurrencyLimit
	Activities map[string]harvest.ConcurrencyLimit
	Rates      map[string]harvest.RateLimit
}

// Set is the limits in force. Its methods are safe for concurrent use,
// and cheap when nothing is limited.
type Set struct {
	reg     *harvest.Registry
	runtime func() Runtime
}

// New makes the view of reg's limits, overridden by runtime's (nil:
// none set at run time). runtime is called as limits are needed: it
// must be cheap and safe for concurrent use.
func New(reg *harvest.Registry, runtime func() Runtime) *Set {
	if runtime == nil {
		runtime = func() Runtime { return Runtime{} }
	}
	return &Set{reg: reg, runtime: runtime}
}

// Workflow is the concurrency limit of workflow name.
func (s *Set) Workflow(name string) harvest.ConcurrencyLimit {
	if l, ok := s.runtime().Workflows[name]; ok {
		return l
	}
	return s.reg.WorkflowConcurrency(name)
}

// AnyWorkflow reports whether some workflow may be limited.
func (s *Set) AnyWorkflow() bool { return s.reg.HasLimits() || len(s.runtime().Workflows) > 0 }

// Workflows lists the limited workflows with their limits.
func (s *Set) Workflows() map[string]harvest.ConcurrencyLimit {
	return merge(s.reg.LimitedWorkflows(), s.runtime().Workflows, harvest.ConcurrencyLimit.Limited)
}

// AnyActivity reports whether some activity may be limited.
func (s *Set) AnyActivity() bool {
	rt := s.runtime()
	return s.reg.HasActivityLimits() || len(rt.Activities) > 0 || len(rt.Rates) > 0
}

// Activities lists the activities under a concurrency limit.
func (s *Set) Activities() map[string]harvest.ConcurrencyLimit {
	return merge(s.reg.LimitedActivities(), s.runtime().Activities, harvest.ConcurrencyLimit.Limited)
}

// Rates lists the activities under a rate limit.
func (s *Set) Rates() map[string]harvest.RateLimit {
	return merge(s.reg.RateLimitedActivities(), s.runtime().Rates, harvest.RateLimit.Limited)
}

// ActivityNames lists, sorted, the activities under a concurrency or a
// rate limit, with their limits (a zero limit: none of that kind).
func (s *Set) ActivityNames() (names []string, conc map[string]harvest.ConcurrencyLimit, rate map[string]harvest.RateLimit) {
	conc, rate = s.Activities(), s.Rates()
	names = slices.Sorted(maps.Keys(conc))
	for name := range rate {
		if _, ok := conc[name]; !ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names, conc, rate
}

// merge is declared overridden by set, keeping the limits that limit.
func merge[L any](declared, set map[string]L, limited func(L) bool) map[string]L {
	out := maps.Clone(declared)
	if out == nil {
		out = map[string]L{}
	}
	for name, l := range set {
		if limited(l) {
			out[name] = l
		} else {
			delete(out, name)
		}
	}
	return out
}

package harvest

import "time"

// WorkflowTimeouts bound how long a workflow may run, in workflow time
// from its start; zero is no bound. A run past a bound is closed
// TIMED_OUT by the engine (a durable timer written with the run), whatever
// its code is doing: no cleanup runs.
type WorkflowTimeouts struct {
	// Execution bounds the whole chain of runs of one start (all of its
	// continue-as-new successors, once those exist).
	Execution time.Duration
	// Run bounds one run. Until continue-as-new exists a chain is one run,
	// so the two mean the same; the earlier deadline wins.
	Run time.Duration
}

// WithTimeouts sets the workflow's default timeouts; a start's
// execution_timeout and run_timeout override them field by field.
func (w *Workflow[In, Out]) WithTimeouts(t WorkflowTimeouts) *Workflow[In, Out] {
	w.timeouts = t
	return w
}

// WorkflowTimeouts returns the default timeouts of a registered workflow
// (zero when it has none or is not registered).
func (r *Registry) WorkflowTimeouts(name string) WorkflowTimeouts {
	def, _ := r.workflow(name)
	return def.timeouts
}

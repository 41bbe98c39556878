// Package helpers has workflows that are named functions and method
// values, and the helpers they call in the same package.
package helpers

import (
	"os"
	"time"

	"github.com/harvestd/harvest"
)

// Service holds the workflows as methods.
type Service struct{ region string }

// New declares the workflows.
func New() *Service {
	s := &Service{}
	harvest.NewWorkflow("method", s.run)
	harvest.NewWorkflow("named", named)
	harvest.NewWorkflow("literal", func(ctx harvest.Context, _ int) (string, error) {
		return stamp(), nil
	})
	return s
}

// run is a method value workflow.
func (s *Service) run(ctx harvest.Context, n int) (int, error) { // want run:"nondeterministic\\(time.Now in workflow code: use ctx.Now\\(\\) \\(helpers.go:\\d+\\), via helpers.stamp\\)"
	_ = stamp()
	s.worker(ctx)
	harvest.Go(ctx, s.background)
	return n, nil
}

// named is a named function workflow.
func named(ctx harvest.Context, _ int) (string, error) { // want named:"nondeterministic\\(os.Getenv"
	return os.Getenv("HOME"), nil // want `os.Getenv in workflow code`
}

// stamp is a helper that two workflows call: reported once, in place.
func stamp() string { // want stamp:"nondeterministic\\(time.Now in workflow code"
	return time.Now().String() // want `time.Now in workflow code: use ctx.Now\(\) \(in helpers.stamp, called from workflow "method"\)`
}

// worker is a helper method that reaches a second helper.
func (s *Service) worker(ctx harvest.Context) { // want worker:"nondeterministic\\(channel receive.*via helpers.wait\\)"
	wait()
}

// wait is a helper of a helper.
func wait() { // want wait:"nondeterministic\\(channel receive"
	var ch chan int
	<-ch // want `channel receive in workflow code: use harvest.NewChannel \(in helpers.wait, called from workflow "method"\)`
}

// background is a coroutine of the workflow, started through harvest.Go.
func (s *Service) background(ctx harvest.Context) { // want background:"nondeterministic\\(write to package variable"
	last = s.region // want `write to package variable last in workflow code: workflow state must live in local variables \(in \(\*helpers.Service\).background`
}

var last string

// Package cross has workflows that call helpers of another package of
// the module: reported at the call, from the helpers' facts.
package cross

import (
	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/flows/cross/lib"
)

var _ = harvest.NewWorkflow("cross", func(ctx harvest.Context, n int) (int, error) {
	n = lib.Double(n)
	n += lib.Backoff(n)     // want `call to lib.Backoff: math/rand.Intn in workflow code: use harvest.SideEffect \(lib.go:\d+\), via lib.Jitter`
	_ = lib.Clock{}.Stamp() // want `call to \(lib.Clock\).Stamp: time.Now in workflow code`
	return n, nil
})

// Workflow is a named workflow whose helper is in another package.
func Workflow(ctx harvest.Context, n int) (int, error) { // want Workflow:"nondeterministic\\(math/rand.Intn.*via lib.Run"
	return lib.Run(n), nil // want `call to lib.Run: math/rand.Intn`
}

var _ = harvest.NewWorkflow("named", Workflow)

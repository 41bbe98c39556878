// Package workflowcheck is an analyzer (golang.org/x/tools/go/analysis)
// that reports non-deterministic code in Harvest workflow functions.
// Command harvest-vet runs it, alone or as go vet's -vettool.
//
// # What is workflow code
//
// Workflow code is replayed against its history, so it must do the same
// thing on every run. The roots are the functions passed to
// harvest.NewWorkflow: a function literal, a named function or a method
// value. From them the analyzer follows every static call and every
// function or method value to the functions declared in the same
// package, and reports their findings in place, once, naming the helper
// and the workflow that reached it. Functions of other packages of the
// same module are followed through facts: each function that does, or
// calls, something non-deterministic carries a NonDeterministic fact,
// and a workflow's call to it is reported at the call, with the cause.
// Interface calls and function variables are not followed, nor is the
// SDK (package harvest) itself, nor any other module.
//
// The function arguments of harvest.SideEffect (recorded once, not
// replayed) and of harvest.NewActivity are not workflow code; nor is
// anything else outside the workflows.
//
// # What it reports
//
// Each report says what to use instead:
//
//   - range over a map, or over maps.Keys, maps.Values or maps.All:
//     iterate sorted keys (slices.Sorted(maps.Keys(m)))
//   - time.Now, time.Since, time.Until: use ctx.Now()
//   - time.Sleep: use harvest.Sleep; time.After, time.Tick,
//     time.NewTimer, time.NewTicker, time.AfterFunc: use harvest.NewTimer
//   - go statements: use harvest.Go
//   - channel send, receive, close, make(chan) and range over a channel:
//     use harvest.NewChannel; select: use harvest.NewSelector
//   - the functions and variables of math/rand, math/rand/v2 and
//     crypto/rand: use harvest.SideEffect
//   - os.Getenv, os.LookupEnv, os.Environ: pass configuration in the
//     workflow input or via harvest.SideEffect
//   - an assignment or ++/-- to a package variable, or to a field or
//     element of one: workflow state must live in local variables
//
// # The escape hatch
//
// A comment "//harvest:ignore <reason>" at the end of a line suppresses
// the reports of that line; alone on a line, those of the line below. A
// suppressed call is not followed, and a suppressed finding gives its
// function no fact. A directive without a reason is itself reported (and
// still suppresses).
package workflowcheck

// Package escape exercises the //harvest:ignore escape hatch.
package escape

import (
	"os"
	"time"

	"github.com/harvestd/harvest"
)

var _ = harvest.NewWorkflow("escape", func(ctx harvest.Context, _ int) (string, error) {
	a := time.Now().String() //harvest:ignore logged only, never decides a branch
	//harvest:ignore the tests set it before the worker starts and never change it
	b := os.Getenv("MODE")
	_ = time.Now()          // want `time.Now in workflow code`
	c := os.Getenv("OTHER") //harvest:ignore // want `harvest:ignore needs a reason`
	_ = time.Now()          // want `time.Now in workflow code`
	traced()                //harvest:ignore traced only logs
	return a + b + c, nil
})

// traced would be reported, but its only call is ignored.
func traced() { // want traced:"nondeterministic\\(time.Now"
	_ = time.Now()
}

// quiet is ignored inside: no fact, so no report at its callers.
func quiet() time.Time {
	return time.Now() //harvest:ignore a metric, recorded by no decision
}

var _ = harvest.NewWorkflow("quiet", func(ctx harvest.Context, _ int) (time.Time, error) {
	return quiet(), nil
})

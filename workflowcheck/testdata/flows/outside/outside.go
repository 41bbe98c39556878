// Package outside has code that is not workflow code: nothing is
// reported, though the functions carry facts.
package outside

import (
	"os"
	"time"

	"github.com/harvestd/harvest"
)

var hits int

// Charge is an activity: activities may do anything.
var Charge = harvest.NewActivity("charge", func(ctx *harvest.ActivityContext, n int) (string, error) {
	hits++
	go func() {}()
	return os.Getenv("KEY") + time.Now().String(), nil
})

// charge is an activity declared as a named function.
func charge(ctx *harvest.ActivityContext, m map[string]int) (int, error) { // want charge:"nondeterministic\\(range over a map"
	n := 0
	for range m {
		n++
	}
	return n, nil
}

var _ = harvest.NewActivity("charge_map", charge)

// Serve is ordinary code.
func Serve(ch chan int) { // want Serve:"nondeterministic\\(select"
	select {
	case <-ch:
	case <-time.After(time.Second):
	}
}

// Deterministic workflow: SideEffect takes the wall clock, SDK calls.
var _ = harvest.NewWorkflow("clean", func(ctx harvest.Context, d time.Duration) (time.Time, error) {
	now, err := harvest.SideEffect(ctx, time.Now)
	if err != nil {
		return now, err
	}
	return ctx.Now().Add(d), harvest.Sleep(ctx, d)
})

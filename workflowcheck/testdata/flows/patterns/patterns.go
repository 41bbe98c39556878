// Package patterns has one workflow literal per finding.
package patterns

import (
	crand "crypto/rand"
	"maps"
	"math/rand"
	randv2 "math/rand/v2"
	"os"
	"slices"
	"time"

	"github.com/harvestd/harvest"
)

var counter int

var state struct{ n int }

var byName = map[string]int{}

var (
	_ = harvest.NewWorkflow("map", func(ctx harvest.Context, m map[string]int) (int, error) {
		sum := 0
		for _, v := range m { // want `range over a map in workflow code: iterate sorted keys \(slices.Sorted\(maps.Keys\(m\)\)\)`
			sum += v
		}
		for k := range maps.Keys(m) { // want `range over maps.Keys in workflow code`
			sum += m[k]
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			sum += m[k]
		}
		return sum, nil
	})

	_ = harvest.NewWorkflow("time", func(ctx harvest.Context, d time.Duration) (time.Time, error) {
		start := time.Now()        // want `time.Now in workflow code: use ctx.Now\(\)`
		_ = time.Since(start)      // want `time.Since in workflow code: use ctx.Now\(\).Sub\(t\)`
		_ = time.Until(start)      // want `time.Until in workflow code`
		time.Sleep(d)              // want `time.Sleep in workflow code: use harvest.Sleep\(ctx, d\)`
		<-time.After(d)            // want `time.After in workflow code: use harvest.NewTimer\(ctx, d\)` `channel receive in workflow code: use harvest.NewChannel`
		_ = time.Tick(d)           // want `time.Tick in workflow code`
		_ = time.NewTimer(d)       // want `time.NewTimer in workflow code`
		_ = time.NewTicker(d)      // want `time.NewTicker in workflow code`
		_ = time.AfterFunc(d, nil) // want `time.AfterFunc in workflow code`
		now := time.Now            // want `time.Now in workflow code`
		_ = now
		return ctx.Now().Add(d), harvest.Sleep(ctx, d)
	})

	_ = harvest.NewWorkflow("concurrency", func(ctx harvest.Context, n int) (int, error) {
		ch := make(chan int, 1) // want `make\(chan\) in workflow code: use harvest.NewChannel`
		go func() {}()          // want `go statement in workflow code: use harvest.Go`
		ch <- n                 // want `channel send in workflow code: use harvest.NewChannel`
		v := <-ch               // want `channel receive in workflow code`
		select {                // want `select in workflow code: use harvest.NewSelector`
		case v = <-ch:
		case ch <- v:
		default:
		}
		close(ch)      // want `close of a channel in workflow code`
		for range ch { // want `range over a channel in workflow code`
		}
		harvest.Go(ctx, func(ctx harvest.Context) {})
		return v, nil
	})

	_ = harvest.NewWorkflow("random", func(ctx harvest.Context, n int) (int, error) {
		a := rand.Intn(n)      // want `math/rand.Intn in workflow code: use harvest.SideEffect`
		b := randv2.IntN(n)    // want `math/rand/v2.IntN in workflow code: use harvest.SideEffect`
		_, _ = crand.Read(nil) // want `crypto/rand.Read in workflow code`
		_ = crand.Reader       // want `crypto/rand.Reader in workflow code`
		c, err := harvest.SideEffect(ctx, func() int { return rand.Intn(n) })
		return a + b + c, err
	})

	_ = harvest.NewWorkflow("env", func(ctx harvest.Context, _ struct{}) (string, error) {
		v := os.Getenv("REGION")               // want `os.Getenv in workflow code: pass configuration in the workflow input or via harvest.SideEffect`
		if w, ok := os.LookupEnv("ZONE"); ok { // want `os.LookupEnv in workflow code`
			v += w
		}
		return v, nil
	})

	_ = harvest.NewWorkflow("globals", func(ctx harvest.Context, n int) (int, error) {
		counter++                                // want `write to package variable counter in workflow code: workflow state must live in local variables`
		counter = n                              // want `write to package variable counter`
		state.n = n                              // want `write to package variable state`
		byName["x"] = n                          // want `write to package variable byName`
		local := counter + byName["x"] + state.n // reads are fine
		local++
		return local, nil
	})
)

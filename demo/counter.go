package demo

import (
	"fmt"

	"github.com/harvestd/harvest"
)

// The counter: a long-lived workflow that continues as new.
//
// counter receives "add" signals and sums them. Every CounterInput.Every
// signals its run continues as new, carrying the count, the sum and the
// ids of the signals so far in its input; the chain completes once it
// has received CounterInput.Until signals. Each run first runs one
// noop_step activity (with the run's number), so every link of the chain
// schedules work under keys of its own. Its output names every signal the
// chain received, in order: a test that sends each id once (with retries
// under one idempotency key) checks that none was lost or doubled across
// the hand-overs, and Runs that the chain had Until/Every (rounded up)
// links.

// Names of the counter workflow, its signal and its query.
const (
	CounterName = "counter"
	// CounterAddSignal adds to the counter.
	CounterAddSignal = "add"
	// CounterQuery answers the chain's count so far.
	CounterQuery = "count"
	// CounterEveryDefault is how many signals a run receives before it
	// continues as new when CounterInput.Every is 0.
	CounterEveryDefault = 10
	// CounterMax bounds CounterInput.Until: the output lists every id.
	CounterMax = 10_000
)

// CounterInput is the counter's input: its configuration and what the
// chain's earlier runs received.
type CounterInput struct {
	// Every is how many signals one run receives before it continues as
	// new (default CounterEveryDefault).
	Every int `json:"every,omitempty"`
	// Until is how many signals the chain receives before it completes.
	Until int `json:"until"`
	// Count, Sum and IDs are what earlier runs of the chain received;
	// Runs counts those runs.
	Count int      `json:"count,omitempty"`
	Sum   int      `json:"sum,omitempty"`
	IDs   []string `json:"ids,omitempty"`
	Runs  int      `json:"runs,omitempty"`
}

// CounterAdd is the payload of the "add" signal.
type CounterAdd struct {
	ID string `json:"id"`
	N  int    `json:"n"`
}

// CounterResult is the counter's output: what the whole chain received
// and how many runs it took (the last one included).
type CounterResult struct {
	Count int      `json:"count"`
	Sum   int      `json:"sum"`
	IDs   []string `json:"ids"`
	Runs  int      `json:"runs"`
}

// Add is the typed "add" signal.
var Add = harvest.NewSignal[CounterAdd](CounterAddSignal)

// counterSchema is the counter's input schema.
var counterSchema = fmt.Appendf(nil, `{"type":"object","required":["until"],"properties":{`+
	`"every":{"type":"integer","minimum":0,"maximum":%d},"until":{"type":"integer","minimum":0,"maximum":%d}}}`,
	CounterMax, CounterMax)

// counter is one run of the counter chain (see above).
func (d *Demo) counter(ctx harvest.Context, in CounterInput) (CounterResult, error) {
	every := in.Every
	if every <= 0 {
		every = CounterEveryDefault
	}
	harvest.SetQueryHandler(ctx, CounterQuery, func(struct{}) (int, error) { return in.Count, nil })
	if _, err := d.NoopStep.Execute(ctx, in.Runs).Get(ctx); err != nil {
		return CounterResult{}, err
	}
	for got := 0; in.Count < in.Until; got++ {
		if got == every || harvest.ShouldContinueAsNew(ctx) {
			in.Runs++
			return CounterResult{}, d.Counter.ContinueAsNew(ctx, in)
		}
		add, err := Add.Receive(ctx)
		if err != nil {
			return CounterResult{}, err
		}
		in.Count, in.Sum, in.IDs = in.Count+1, in.Sum+add.N, append(in.IDs, add.ID)
	}
	return CounterResult{Count: in.Count, Sum: in.Sum, IDs: in.IDs, Runs: in.Runs + 1}, nil
}

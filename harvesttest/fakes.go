package harvesttest

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine"
)

// ActivityFunc is an activity implementation on JSON input and output,
// what Env.ReplaceActivity takes; Fake builds one from a typed function.
type ActivityFunc func(ctx *harvest.ActivityContext, input json.RawMessage) (json.RawMessage, error)

// Fake adapts a typed activity function to an ActivityFunc: the input is
// decoded into In and the output encoded, as a registered activity's are.
func Fake[In, Out any](fn func(ctx *harvest.ActivityContext, in In) (Out, error)) ActivityFunc {
	return func(ctx *harvest.ActivityContext, raw json.RawMessage) (json.RawMessage, error) {
		var in In
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &in); err != nil {
				return nil, harvest.NewNonRetryableError("invalid_input", fmt.Sprintf("decode input of fake activity %s: %v", ctx.Info().ActivityName, err))
			}
		}
		out, err := fn(ctx, in)
		if err != nil {
			return nil, err
		}
		return json.Marshal(out)
	}
}

// fakes runs activity attempts: a replaced activity's fake, else the
// registry's implementation.
type fakes struct {
	real engine.ActivityRunner
	mu   sync.RWMutex
	fns  map[string]ActivityFunc
}

var _ engine.ActivityRunner = (*fakes)(nil)

func newFakes(real engine.ActivityRunner) *fakes {
	return &fakes{real: real, fns: map[string]ActivityFunc{}}
}

func (f *fakes) replace(name string, fn ActivityFunc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fns[name] = fn
}

// RunActivity runs one attempt of the named activity.
func (f *fakes) RunActivity(ctx *harvest.ActivityContext, name string, input json.RawMessage) (json.RawMessage, error) {
	f.mu.RLock()
	fn, ok := f.fns[name]
	f.mu.RUnlock()
	if ok {
		return fn(ctx, input)
	}
	return f.real.RunActivity(ctx, name, input)
}

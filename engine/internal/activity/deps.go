package activity

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/limits"
	"github.com/harvestd/harvest/engine/internal/loop"
	"github.com/harvestd/harvest/engine/internal/runs"
	"github.com/harvestd/harvest/engine/internal/ssrf"
	"github.com/harvestd/harvest/engine/internal/wftask"
)

// CrashOutcome: an attempt's outcome (a retry, a failure, a completion
// the batch could not record) is about to be written; a hook that fails
// here without stopping the engine is a database blip, which the record
// survives (outcome_retry.go).
const CrashOutcome loop.CrashPoint = "activity_outcome.before_commit"

// Runner runs one attempt of an activity by name on its JSON input.
type Runner interface {
	RunActivity(ctx *harvest.ActivityContext, name string, input json.RawMessage) (json.RawMessage, error)
}

// Clock is the part of the engine's clock attempts watch: a test clock
// that jumps ahead (Advanced) passes their timeouts.
type Clock interface {
	Advanced() <-chan struct{}
}

// Deps is what the activity path uses; the engine fills it.
type Deps struct {
	runs.Service
	// Reg says which activities the engine's registry has (an HTTP
	// activity registered at run time serves only the others); Code runs
	// the attempts; HTTP finds the HTTP activities registered at run time
	// (nil: none).
	Reg  *harvest.Registry
	Code Runner
	HTTP Resolver
	// Policy is the address policy of HTTP activities' outbound calls.
	Policy ssrf.Policy
	// WF runs the workflow tasks a completion batch wakes.
	WF *wftask.Runner
	// Clock is the engine's clock; Epoch the lease epoch claims carry.
	Clock Clock
	Epoch func() int64
	// Limits are the activities' concurrency and rate limits in force.
	Limits *limits.Set
	// Workers bounds the running attempts; LeaseTTL bounds a completion
	// batch's transaction.
	Workers  int
	LeaseTTL time.Duration
	// Wake wakes the activity loop.
	Wake chan struct{}
	// Spawn runs a loop until the engine stops; Loops counts the
	// attempts dispatched by a batch, which outlive it.
	Spawn func(ctx context.Context, loop func(context.Context))
	Loops *sync.WaitGroup
}

// Attempts runs a shard's activity attempts.
type Attempts struct {
	d Deps
	// slots bounds running attempts (the loop's claims and direct
	// dispatch take from one pool).
	slots *activitySlots
	// pending says activity tasks may be waiting in the table for the
	// loop (see Run).
	pending atomic.Bool
	// retryWake wakes the loop when a retry comes due.
	retryWake *loop.Wakeup
	// http is the outbound HTTP of HTTP activities (http_outbound.go).
	http *activityOutbound
	// completions is the completion batcher (nil before RunCompletions).
	completions atomic.Pointer[loop.Batcher[*completion]]
}

// New makes the activity path.
func New(d Deps) *Attempts {
	a := &Attempts{d: d, slots: newActivitySlots(d.Workers), http: newActivityOutbound(d.Policy)}
	a.retryWake = loop.NewWakeup(a.WakeDue)
	return a
}

// Stop drops the retries' pending wake-ups (the engine stopped).
func (a *Attempts) Stop() { a.retryWake.Stop() }

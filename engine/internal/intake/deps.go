package intake

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/fence"
	"github.com/harvestd/harvest/engine/internal/loop"
	"github.com/harvestd/harvest/engine/internal/runs"
	"github.com/harvestd/harvest/engine/internal/ssrf"
	"github.com/harvestd/harvest/engine/internal/wftask"
)

// CrashSignal: a signal batch (a selector's wake-up) before its commit.
// CrashCancel: a cancel request before its commit.
const (
	CrashSignal loop.CrashPoint = "signal.before_commit"
	CrashCancel loop.CrashPoint = "cancel.before_commit"
)

// Deps is what the intake uses; the engine fills it.
type Deps struct {
	runs.Service
	// Reg is the registry: which workflows exist, their inputs, signals
	// and default timeouts.
	Reg *harvest.Registry
	// WF runs the first workflow tasks of a start batch's new runs;
	// Reserve takes free activity slots for their direct dispatch.
	WF      *wftask.Runner
	Reserve func(n int) *runs.Direct
	// Route adds the rows of the commands a first task gives that act on
	// other runs (the outbox's kinds).
	Route runs.Router
	// Watch records the runs a start batch opens (and serves the claim
	// cache's known-open check).
	Watch *runs.Watch
	// Clock estimates the database's time (one-trip start batches); the
	// fence samples it too.
	Clock *fence.Clock
	// Policy is the address policy of completion callbacks' URLs.
	Policy ssrf.Policy
	// ShardID is the shard; Window the start keys' idempotency window;
	// LeaseTTL bounds a batch's transaction; StartBatchMax the starts of
	// one group commit (1: off).
	ShardID       uint16
	Window        time.Duration
	LeaseTTL      time.Duration
	StartBatchMax int
	// Wake wakes the workflow loop (the flow dispatcher is woken through
	// Settle, by loop.Flow).
	Wake chan struct{}
	// Limit is the concurrency limit of a workflow (nil: the registry's,
	// harvest.Workflow.WithConcurrency).
	Limit func(name string) harvest.ConcurrencyLimit
	// Spawn runs a loop until the engine stops.
	Spawn func(ctx context.Context, loop func(context.Context))
}

// Intake admits a shard's starts, signals, cancels and terminates.
type Intake struct {
	d      Deps
	keys   *seenKeys
	claims *claimCache
	gates  gateCache
	hints  flowHints
	// Starts is the start batcher (nil: group commit off), Probes the
	// replay probe batcher (nil: probes run alone), Signals the signal
	// batcher (nil before Run; a test empties it to send every signal
	// alone).
	Starts  atomic.Pointer[loop.Batcher[*StartCall]]
	Probes  atomic.Pointer[loop.Batcher[*ProbeCall]]
	Signals atomic.Pointer[loop.Batcher[*SignalCall]]
	// SignalRetries counts signal batches that failed as a whole, their
	// signals then sent through the single path (signal_batch.go).
	SignalRetries atomic.Int64
	// OneTripPaused counts the start batches still to take two trips
	// after a one-trip batch missed (one_trip.go).
	OneTripPaused atomic.Int32
	// BatchTrips counts start batches: committed in one trip, two trips,
	// one-trip misses, one-trip batches that failed as a whole.
	BatchTrips [4]atomic.Int64
}

// New makes the intake.
func New(d Deps) *Intake {
	return &Intake{d: d, keys: newSeenKeys(), claims: newClaimCache(claimGeneration, d.Poll)}
}

// Run starts the intake's batchers (starts, probes, signals) for this run
// of the engine.
func (in *Intake) Run(ctx context.Context) {
	in.runStartBatcher(ctx)
	in.runProbeBatcher(ctx)
	in.runSignalBatcher(ctx)
}

// Forget drops the cached claims: the lease changed hands.
func (in *Intake) Forget() { in.claims.forget() }

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

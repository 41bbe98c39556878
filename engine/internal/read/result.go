package read

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
)

// Result waits up to wait for the run to close and returns its outcome,
// which may still be RUNNING when wait elapsed. A close this engine
// commits while Result waits hands its outcome over (see runs.Watch), and
// a run this engine created and has not seen close is not read before
// the wait: a poll that waits for the close of a fresh run reads nothing.
// The PollInterval tick reads the run whatever the watch says. A run that
// continued as new, or that a reset replaced, is not an end: Result
// follows the chain to its successor within the same wait, and answers
// the outcome of the chain's last run (shardapi.Outcome.ExecutionID).
func (r *Reader) Result(ctx context.Context, id uuid.UUID, wait time.Duration) (shardapi.Outcome, error) {
	until := time.Now().Add(wait)
	for {
		o, err := r.runResult(ctx, id, time.Until(until))
		if err != nil || o.ContinuedTo == nil {
			return o, err
		}
		id = *o.ContinuedTo
	}
}

// runResult is Result for one run of a chain.
func (r *Reader) runResult(ctx context.Context, id uuid.UUID, wait time.Duration) (shardapi.Outcome, error) {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(r.d.Poll)
	defer tick.Stop()
	w := r.d.Watch.WaitFor(id)
	defer w.Release()
	closed := w.Closed()
	var (
		o    shardapi.Outcome
		read = !w.KnownOpen || !r.d.Owning()
		err  error
	)
	for {
		if read {
			if o, err = r.outcome(ctx, id); err != nil || shardapi.IsTerminal(o.State) {
				return o, err
			}
		}
		select {
		case <-ctx.Done():
			return o, ctx.Err()
		case <-deadline.C:
			if !read {
				return r.outcome(ctx, id)
			}
			return o, nil
		case <-closed:
			if o, ok := w.Outcome(); ok {
				o.ExecutionID = id
				return o, nil
			}
			closed = nil // closed without its outcome: read the run a last time
		case <-tick.C:
		}
		read = true
	}
}

// outcome reads a run's outcome.
func (r *Reader) outcome(ctx context.Context, id uuid.UUID) (shardapi.Outcome, error) {
	o, err := store.Outcome(ctx, r.d.Pool, id)
	if err != nil {
		return shardapi.Outcome{}, fmt.Errorf("execution %s: %w", id, store.Translate(err))
	}
	return o, nil
}

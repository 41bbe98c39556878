package intake

import (
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest/engine/internal/fence"
	"github.com/harvestd/harvest/engine/internal/runs"
	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
)

// Workflow timeouts.
//
// A start with an execution or run timeout (its own, or its workflow's
// default, harvest.WorkflowTimeouts) writes one durable timer per bound
// in its start transaction, under a reserved timer id that workflow code
// cannot issue (its timers are numbered). The timer loop fires it like any
// timer; firing one closes the run TIMED_OUT, appending WorkflowTimedOut,
// in the transaction that deletes the timer. The deadline is workflow
// time (the database's clock plus Config.Clock's offset), so a test clock
// drives it. A keyed replay of the start creates no run and so no timer.
// A run that continues as new hands its successor the execution timeout's
// deadline unchanged and a run timeout as long as its own (chain.go): the
// execution timeout spans the chain.

// runTimeout is one bound of a start, resolved from the request and the
// workflow's defaults.
type runTimeout struct {
	kind string
	d    time.Duration
}

func (t runTimeout) timerID() string { return runs.TimeoutTimerPrefix + t.kind }

// resolveTimeouts fills req.timeouts from its own timeouts and the
// workflow's defaults.
func (in *Intake) resolveTimeouts(req *StartRequest) error {
	defaults := in.d.Reg.WorkflowTimeouts(req.WorkflowName)
	req.timeouts = nil
	for _, t := range []struct {
		kind string
		own  *time.Duration
		def  time.Duration
	}{{runs.TimeoutExecution, req.ExecutionTimeout, defaults.Execution}, {runs.TimeoutRun, req.RunTimeout, defaults.Run}} {
		d := t.def
		if t.own != nil {
			d = *t.own
		}
		if d < 0 {
			return fmt.Errorf("%s_timeout %s is negative: %w", t.kind, d, shardapi.ErrInvalidArgument)
		}
		if d > 0 {
			req.timeouts = append(req.timeouts, runTimeout{kind: t.kind, d: d})
		}
	}
	return nil
}

// queueTimeoutTimers queues the timeout timers of one new run, due d
// after at (the run's start in workflow time, its WorkflowStarted's
// timestamp).
func queueTimeoutTimers(b *pgx.Batch, id uuid.UUID, at time.Time, timeouts []runTimeout) {
	for _, t := range timeouts {
		store.QueueTimerAt(b, id, t.timerID(), at.Add(t.d))
	}
}

// queueTimeoutTimersNow is queueTimeoutTimers for a run started by tx
// itself: due d after tx's workflow time.
func queueTimeoutTimersNow(b *pgx.Batch, tx *fence.Tx, id uuid.UUID, timeouts []runTimeout) {
	for _, t := range timeouts {
		store.QueueTimerIn(b, id, t.timerID(), (tx.Ahead() + t.d).Microseconds())
	}
}

package harvesttest

import (
	"time"

	"github.com/google/uuid"

	"github.com/harvestd/harvest/engine"
)

// WaitFor reads the run (Describe) until cond holds and returns what it
// read; it fails the test, naming what, when the Env's timeout passes
// first or the run closes with cond still false.
func (e *Env) WaitFor(id uuid.UUID, what string, cond func(engine.Description) bool) engine.Description {
	e.t.Helper()
	deadline := time.Now().Add(e.timeout)
	for {
		d := e.Describe(id)
		switch {
		case cond(d):
			return d
		case engine.IsTerminal(d.Execution.State):
			e.t.Fatalf("harvesttest: run %s closed %s before %s", id, d.Execution.State, what)
		case time.Now().After(deadline):
			e.t.Fatalf("harvesttest: run %s: no %s after %s (last task error %q)", id, what, e.timeout, d.Execution.LastError)
		}
		time.Sleep(waitStep) // the next read: a poll with a deadline
	}
}

// NextTimer waits until the run has a timer due after the current
// workflow time (a Sleep, a NewTimer or a ReceiveWithTimeout waiting) and
// returns the earliest such timer.
func (e *Env) NextTimer(id uuid.UUID) engine.PendingTimer {
	e.t.Helper()
	var next engine.PendingTimer
	e.WaitFor(id, "timer due later", func(d engine.Description) bool {
		t, ok := e.earliest(d, false)
		next = engine.PendingTimer{TimerID: t.id, FireAt: t.at}
		return ok
	})
	return next
}

// SkipTime waits until the run waits on workflow time (a timer, or an
// activity retry's backoff, due after the current workflow time), then
// advances the clock to the earliest of those and returns how far it
// moved. What was due fires at once.
func (e *Env) SkipTime(id uuid.UUID) time.Duration {
	e.t.Helper()
	var at time.Time
	e.WaitFor(id, "timer or retry due later", func(d engine.Description) bool {
		t, ok := e.earliest(d, true)
		at = t.at
		return ok
	})
	d := at.Sub(e.Now())
	e.Advance(d)
	return max(d, 0)
}

// due is a pending timer's or retry's due time.
type due struct {
	id string
	at time.Time
}

// earliest is the earliest of d's timers (and, with retries, of its
// activity retries) due after the current workflow time.
func (e *Env) earliest(d engine.Description, retries bool) (due, bool) {
	now := e.Now()
	var best due
	consider := func(id string, at time.Time) {
		if at.After(now) && (best.at.IsZero() || at.Before(best.at)) {
			best = due{id: id, at: at}
		}
	}
	for _, t := range d.PendingTimers {
		consider(t.TimerID, t.FireAt)
	}
	for _, a := range d.PendingActivities {
		if retries && a.Status == "pending" && a.LastFailedAt != nil {
			consider(a.ActivityID, a.ScheduledAt)
		}
	}
	return best, !best.at.IsZero()
}

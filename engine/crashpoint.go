package engine

import (
	"github.com/harvestd/harvest/engine/internal/activity"
	"github.com/harvestd/harvest/engine/internal/deferred"
	"github.com/harvestd/harvest/engine/internal/flow"
	"github.com/harvestd/harvest/engine/internal/intake"
	"github.com/harvestd/harvest/engine/internal/loop"
	"github.com/harvestd/harvest/engine/internal/maint"
	"github.com/harvestd/harvest/engine/internal/outbox"
	"github.com/harvestd/harvest/engine/internal/schedule"
	"github.com/harvestd/harvest/engine/internal/wftask"
)

// Crash points: the named step boundaries where a test can stop the
// engine as a crash would (crash_test.go). A point is a call of the
// service's crash hook (loop.Crash.At) inside the step; with no hook
// (every real build) it is a nil check. A test sets Config.crashHook, which may block, and returns an
// error: the step then ends as if the process died there, its
// transaction rolled back (the points before a commit) or its commit
// left unacknowledged (crashCommitted). The test abandons the engine and
// starts another on the same database, which takes the lease over.
//
// The points, in the order a workflow task meets them:
//
//   - crashLoaded: the task's history is loaded, its code not run yet
//     (wftask.Runner.RunAndWrite: the workflow loop and the completion batch).
//   - crashRan: the code ran, its commands are queued, nothing is sent.
//   - crashBeforeCommit: the writes are about to go out with the COMMIT.
//   - crashCommitted: the commit succeeded, the direct activity dispatch,
//     close waiters and wake-ups are not done yet (the workflow loop).
//
// A continue-as-new hand-over (internal/intake/chain.go) is one workflow task's
// transaction and meets these four; a signal sent to the old run's id
// meets crashSignal. TestContinueAsNewCrashPoints stops the engine at each.
//
// And one per step that wakes a run:
//
//   - crashSignal: a signal batch (a selector's wake-up) before its commit.
//   - crashCancel: a cancel request before its commit.
//   - crashTimerFire: a timer fire before its commit.
//   - crashTimeoutFire: a workflow timeout fire before its commit.
//   - crashActivityOutcome: an attempt's outcome (finishActivity: a retry,
//     a failure, a completion the batch could not record) is about to be
//     written; a hook that fails here without stopping the engine is a
//     database blip, which the record survives (internal/activity/outcome_retry.go).
//
// And the outbox's (internal/outbox):
//
//   - crashOutboxClaimed: rows are claimed (committed), nothing performed.
//   - crashOutboxResolved: a signal to a workflow id resolved it to a run
//     and recorded that run in its row (committed); the signal is not sent.
//   - crashOutboxPerformed: the keyed operation was answered, its outcome
//     not recorded yet.
//   - crashOutboxRecord: the outcome is written, before its commit.
//   - crashChildClose: a workflow task closes a child run (its report to
//     the parent is queued with the close), nothing is sent yet.
//
// And the schedules' (internal/schedule; a fire's start then meets the
// outbox's points):
//
//   - crashScheduleBeforeCommit: a schedule's fires and its new cursor
//     are written, before the commit.
//   - crashScheduleCommitted: they are committed, the outbox not woken.
//
// And the deferred starts' (internal/deferred; a fire's start then meets
// the outbox's points):
//
//   - crashDeferredBeforeCommit: due items are closed and their outbox
//     rows written, before the commit.
//   - crashDeferredCommitted: they are committed, the outbox not woken.
//
// And the flow dispatcher's (internal/flow):
//
//   - crashFlowBeforeCommit: queued runs were made RUNNING (or running
//     runs adopted), before the commit.
//
// And a reset's (engine/reset.go; TestResetCrashPoints stops at it and at
// the commit's answer):
//
//   - crashReset: the new run, its claim and the old run's close are
//     written, before the commit.
const (
	crashLoaded          = wftask.CrashLoaded
	crashRan             = wftask.CrashRan
	crashBeforeCommit    = wftask.CrashBeforeCommit
	crashCommitted       = wftask.CrashCommitted
	crashSignal          = intake.CrashSignal
	crashCancel          = intake.CrashCancel
	crashTimerFire       = maint.CrashTimerFire
	crashTimeoutFire     = maint.CrashTimeoutFire
	crashActivityOutcome = activity.CrashOutcome

	crashOutboxClaimed   = outbox.CrashClaimed
	crashOutboxResolved  = outbox.CrashResolved
	crashOutboxPerformed = outbox.CrashPerformed
	crashOutboxRecord    = outbox.CrashRecord
	crashChildClose      = wftask.CrashChildClose

	crashScheduleBeforeCommit = schedule.CrashBeforeCommit
	crashScheduleCommitted    = schedule.CrashCommitted

	crashDeferredBeforeCommit = deferred.CrashBeforeCommit
	crashDeferredCommitted    = deferred.CrashCommitted

	crashFlowBeforeCommit = flow.CrashBeforeCommit
)

// crashPoints lists every crash point; crash tests iterate over it.
var crashPoints = []loop.CrashPoint{
	crashLoaded, crashRan, crashBeforeCommit, crashCommitted,
	crashSignal, crashCancel, crashTimerFire, crashTimeoutFire, crashActivityOutcome,
	crashOutboxClaimed, crashOutboxResolved, crashOutboxPerformed, crashOutboxRecord, crashChildClose,
	crashScheduleBeforeCommit, crashScheduleCommitted,
	crashDeferredBeforeCommit, crashDeferredCommitted,
	crashFlowBeforeCommit,
}

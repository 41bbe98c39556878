package activity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/fence"
	"github.com/harvestd/harvest/engine/internal/loop"
	"github.com/harvestd/harvest/engine/internal/runs"
	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
)

// WakeDue wakes the activity loop to claim tasks that came due.
func (a *Attempts) WakeDue() {
	a.pending.Store(true)
	loop.Nudge(a.d.Wake)
}

// Activity timeout types, as recorded in ActivityTimedOut.
const (
	TimeoutStartToClose    = "start_to_close"
	TimeoutScheduleToClose = "schedule_to_close"
	TimeoutHeartbeat       = "heartbeat"
)

var (
	errStartToClose    = errors.New(TimeoutStartToClose)
	errScheduleToClose = errors.New(TimeoutScheduleToClose)
	errHeartbeat       = errors.New(TimeoutHeartbeat)
	errStaleAttempt    = errors.New("activity attempt is no longer current")
	// errActivityCanceled: the workflow cancelled the activity (its task's
	// cancel_requested, see internal/runs/cancel.go).
	errActivityCanceled = errors.New("activity cancel requested")
)

// Task is one activity attempt handed to this engine.
type Task struct {
	store.ClaimedTask
	// Since is this node's clock before the claim was made: the attempt's
	// timeouts count from it, so an attempt that waited for a slot never
	// outlives its lock (locked_until counts from the claim).
	Since time.Time
	// expiredOnly: the outcome is an async attempt's timeout (sweepAsync),
	// recorded only if its lock is still expired (no heartbeat since).
	expiredOnly bool
}

// Run claims due activity tasks into the free worker slots (see
// activitySlots: direct dispatch takes from the same pool) and runs each in
// its own goroutine; it waits for them before returning.
//
// It polls on its first pass, on every tick (retries come due, locks
// expire), and on a nudge when tasks may be waiting (actPending: a batch
// left tasks it could not dispatch, or an earlier poll found no slot or
// filled every slot). A freed slot nudges it too, but with nothing
// waiting that costs no claim transaction.
func (a *Attempts) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	t := time.NewTicker(a.d.Poll)
	defer t.Stop()
	reclaim := true // running tasks left by a lost lease or an old owner: first pass, then each tick
	poll := true
	for {
		if poll || a.pending.Swap(false) {
			more, claimed := a.pollActivities(ctx, &wg, reclaim)
			if claimed {
				reclaim = false // until the next tick; a tick with no free slot keeps it
			}
			if poll = more; more {
				continue
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-a.d.Wake:
		case <-t.C:
			reclaim, poll = true, true
			a.sweepAsync(ctx)
		}
	}
}

// pollActivities claims due tasks for the free slots and starts each in a
// goroutine of wg. more says it filled every slot (more may be due);
// claimed says a claim transaction committed.
//
// The slots are taken after the claim, so that direct dispatch is not
// kept from them while the claim runs. Dispatch leaves dispatchReserve
// slots free, so the loop always gets that many; tasks claimed beyond
// the slots it gets are handed back (unclaimActivities).
func (a *Attempts) pollActivities(ctx context.Context, wg *sync.WaitGroup, reclaim bool) (more, claimed bool) {
	free := a.slots.free()
	if free == 0 {
		a.pending.Store(true) // the next freed slot polls
		return false, false
	}
	tasks, err := a.Claim(ctx, free, reclaim)
	if err != nil && ctx.Err() == nil {
		a.d.Log.Warn().Err(err).Msg("claim activities failed")
		a.pending.Store(true)
	}
	if got := a.slots.take(len(tasks), 0); got < len(tasks) {
		a.Unclaim(ctx, tasks[got:])
		tasks = tasks[:got]
		a.pending.Store(true)
	}
	for _, task := range tasks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.runActivity(ctx, task, a.ReleaseSlot)
		}()
	}
	return err == nil && len(tasks) == free, err == nil
}

// Claim claims up to limit due tasks (reclaim: also running tasks of a
// lost lease or an older owner) for this engine's attempts.
func (a *Attempts) Claim(ctx context.Context, limit int, reclaim bool) ([]Task, error) {
	var tasks []Task
	since, lim := time.Now(), a.Limits()
	err := a.d.Fence.DoBatch(ctx, store.QueueNoSeqScan, func(tx *fence.Tx) error {
		err := store.ClaimTasks(ctx, tx, a.d.Epoch(), limit, reclaim, store.LeaseGrace, tx.Ahead().Microseconds(), lim, func(t store.ClaimedTask) {
			tasks = append(tasks, Task{ClaimedTask: t, Since: since})
		})
		if err != nil {
			return fmt.Errorf("claim activities: %w", err)
		}
		return a.watchTokens(ctx, tx, lim)
	})
	return tasks, err
}

// Unclaim hands claimed tasks that found no slot back to the
// table, as they were before the claim. If that fails they stay claimed
// and are reclaimed when their lock expires.
func (a *Attempts) Unclaim(ctx context.Context, tasks []Task) {
	ids, attempts := make([]int64, len(tasks)), make([]int32, len(tasks))
	for i, t := range tasks {
		ids[i], attempts[i] = t.TaskID, int32(t.Attempt)
	}
	err := a.d.Fence.Do(ctx, func(tx *fence.Tx) error {
		return store.UnclaimTasks(ctx, tx, ids, attempts, a.d.Epoch())
	})
	if err != nil && ctx.Err() == nil {
		a.d.Log.Warn().Err(err).Int("tasks", len(tasks)).Msg("unclaim activities failed")
	}
}

// runActivity runs one attempt and records its outcome. If the engine is
// stopping, nothing is recorded: the attempt is reclaimed by the next owner.
// release frees the attempt's activity slot: once the activity's code has
// returned, so that recording (a batch commit) does not hold the slot.
func (a *Attempts) runActivity(ctx context.Context, t Task, release func()) {
	var once sync.Once
	free := func() { once.Do(release) }
	defer free()
	log := a.d.Log.With().Str("execution_id", t.ExecutionID.String()).Str("activity_id", t.ActivityID).
		Str("activity", t.Name).Int("attempt", t.Attempt).Logger()
	t, remote := a.httpActivity(t)
	policy := t.Options.WithDefaults().Retry
	switch {
	case t.CloseDeadline != nil && !t.ClaimedAt.Before(*t.CloseDeadline):
		a.finishActivity(ctx, t, nil, errScheduleToClose, TimeoutScheduleToClose)
		return
	case t.CancelRequested:
		a.finishActivity(ctx, t, nil, canceledActivity(), "")
		return
	case policy.MaxAttempts > 0 && t.Attempt > policy.MaxAttempts:
		// The previous attempt was lost (its lock expired): it counts.
		a.finishActivity(ctx, t, nil, errStartToClose, TimeoutStartToClose)
		return
	}
	actx, cancel, hb := a.attemptContext(ctx, t)
	defer cancel()
	info := harvest.ActivityInfo{
		ExecutionID: t.ExecutionID.String(), WorkflowName: t.WorkflowName, WorkflowID: t.WorkflowID,
		ActivityID: t.ActivityID, ActivityName: t.Name, Attempt: t.Attempt,
		IdempotencyKey: harvest.IdempotencyKey(t.Key), HeartbeatDetails: t.Heartbeat,
	}
	info.Deadline, _ = actx.Deadline()
	ac := harvest.NewActivityContext(actx, info, hb, log).WithOutbound(a.http).
		WithTaskToken(func(ctx context.Context) (string, error) { return a.mintTaskToken(ctx, t) })
	out, err := a.callActivity(ac, t, remote)
	minted := ac.TokenMinted()
	free()
	if ctx.Err() != nil {
		return
	}
	timeoutType := ""
	if err != nil && actx.Err() != nil {
		switch cause := context.Cause(actx); {
		case errors.Is(cause, errStaleAttempt):
			return
		case errors.Is(cause, errActivityCanceled):
			// Recorded as a failure; retrySQL does not retry it.
		case errors.Is(cause, errStartToClose), errors.Is(cause, errScheduleToClose), errors.Is(cause, errHeartbeat):
			timeoutType = cause.Error()
		}
	}
	if err == nil {
		a.recordCompletion(ctx, t, out)
		return
	}
	if errors.Is(err, harvest.ErrResultPending) && timeoutType == "" {
		if err = a.leaveOpen(ctx, t, actx, minted); err == nil {
			return
		}
	}
	a.finishActivity(ctx, t, out, err, timeoutType)
}

// leaveOpen keeps an attempt that answered harvest.ErrResultPending open
// for its task token's holder; the error to record instead when it
// cannot (no token was minted, or the attempt cannot be marked).
func (a *Attempts) leaveOpen(ctx context.Context, t Task, actx context.Context, minted bool) error {
	if !minted {
		return harvest.NewNonRetryableError("async_without_token",
			"the activity returned ErrResultPending without minting its task token (ActivityContext.TaskToken)")
	}
	deadline, _ := actx.Deadline()
	if _, err := a.markAsync(ctx, t, time.Until(deadline)); err != nil {
		return fmt.Errorf("leave the attempt open: %w", err)
	}
	return nil // marked, or answered already by the token's holder
}

// callActivity runs the attempt: remote's POST when set (an HTTP activity
// registered at run time), else the ActivityRunner's.
func (a *Attempts) callActivity(actx *harvest.ActivityContext, t Task, remote *remoteCall) (out json.RawMessage, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("activity panicked: %v\n%s", r, debug.Stack())
		}
	}()
	if remote != nil {
		return callHTTPActivity(actx, remote, t.Input)
	}
	return a.d.Code.RunActivity(actx, t.Name, t.Input)
}

// attemptContext bounds the attempt by start-to-close, schedule-to-close
// and the heartbeat timeout, and returns the heartbeat function.
func (a *Attempts) attemptContext(ctx context.Context, t Task) (context.Context, context.CancelFunc, harvest.HeartbeatFunc) {
	opts := t.Options.WithDefaults()
	since := t.Since
	if since.IsZero() {
		since = time.Now()
	}
	deadline, cause := since.Add(opts.StartToClose), errStartToClose
	if t.CloseDeadline != nil {
		if d := since.Add(t.CloseDeadline.Sub(t.ClaimedAt)); d.Before(deadline) {
			deadline, cause = d, errScheduleToClose
		}
	}
	dctx, cancelDeadline := context.WithDeadlineCause(ctx, deadline, cause)
	actx, cancelCause := context.WithCancelCause(dctx)
	var watchdog *time.Timer
	if opts.HeartbeatTimeout > 0 {
		watchdog = time.AfterFunc(opts.HeartbeatTimeout, func() { cancelCause(errHeartbeat) })
	}
	clock := a.newAttemptClock(deadline, cause, opts.HeartbeatTimeout)
	if clock != nil {
		go clock.run(actx, cancelCause)
	}
	hb := func(hctx context.Context, details json.RawMessage) error {
		if err := a.recordHeartbeat(hctx, t, details); err != nil {
			if errors.Is(err, errStaleAttempt) {
				cancelCause(errStaleAttempt)
			}
			if errors.Is(err, errActivityCanceled) {
				cancelCause(errActivityCanceled)
				return canceledActivity()
			}
			return err
		}
		if watchdog != nil {
			watchdog.Reset(opts.HeartbeatTimeout)
		}
		if clock != nil {
			clock.heartbeat()
		}
		return nil
	}
	cancel := func() {
		if watchdog != nil {
			watchdog.Stop()
		}
		cancelCause(context.Canceled)
		cancelDeadline()
	}
	return actx, cancel, hb
}

func (a *Attempts) recordHeartbeat(ctx context.Context, t Task, details json.RawMessage) error {
	var canceled bool
	err := a.d.Fence.Do(ctx, func(tx *fence.Tx) (err error) {
		canceled, err = store.Heartbeat(ctx, tx, t.TaskID, t.Attempt, store.NullJSON(details))
		if errors.Is(err, pgx.ErrNoRows) {
			return errStaleAttempt
		}
		if err != nil {
			return fmt.Errorf("record heartbeat: %w", err)
		}
		return nil
	})
	if err == nil && canceled {
		return errActivityCanceled
	}
	return err
}

// finishActivity records an attempt's outcome if the attempt is still the
// current one: completion, a retry with backoff, or the final failure. A
// record that fails is retried while the attempt's lock holds
// (outcome_retry.go).
func (a *Attempts) finishActivity(ctx context.Context, t Task, out json.RawMessage, runErr error, timeoutType string) {
	res, err := a.retryRecord(ctx, t, func(ctx context.Context) (attemptOutcome, error) {
		return a.recordOutcome(ctx, t, out, runErr, timeoutType)
	})
	if err != nil {
		if ctx.Err() == nil {
			a.d.Log.Warn().Err(err).Str("execution_id", t.ExecutionID.String()).Str("activity_id", t.ActivityID).Msg("record activity outcome failed")
		}
		return
	}
	a.afterOutcome(ctx, res)
}

// attemptOutcome is what recording an attempt did: the outcome's metric
// label (empty when the attempt was stale), what its new event asks of
// the engine, and a scheduled retry's backoff.
type attemptOutcome struct {
	outcome string
	fx      runs.Effects
	retryIn time.Duration
}

// recordOutcome is finishActivity's one transaction: fence, lock the
// execution and the attempt, then write the outcome.
func (a *Attempts) recordOutcome(ctx context.Context, t Task, out json.RawMessage, runErr error, timeoutType string) (attemptOutcome, error) {
	var (
		res     attemptOutcome
		ex      *store.Exec
		current bool
	)
	queue := func(b *pgx.Batch) {
		store.QueueLockExec(b, t.ExecutionID, &ex)
		queueLockAttempt(b, &t, &current)
	}
	err := a.d.Fence.DoBatch(ctx, queue, func(tx *fence.Tx) error {
		if ex == nil || !current {
			return nil
		}
		if shardapi.IsTerminal(ex.State) {
			return deleteTask(ctx, tx, t.TaskID)
		}
		if err := a.d.Crash.At(ctx, CrashOutcome); err != nil {
			return err
		}
		var ev harvest.Command
		res.outcome = "completed"
		if runErr == nil {
			ev = harvest.NewCommand(harvest.EventActivityCompleted, harvest.ActivityCompletedData{
				ActivityID: t.ActivityID, Output: runs.InputOrNull(out), Attempt: t.Attempt, Slot: t.Slot})
		} else {
			info := harvest.ToErrorInfo(runErr)
			retried, delay, err := a.maybeRetry(ctx, tx, t, info, timeoutType)
			if err != nil || retried {
				res.outcome, res.retryIn = "retried", delay
				return err
			}
			ev, res.outcome = failureCommand(t, info, timeoutType), "failed"
			if timeoutType != "" {
				res.outcome = "timed_out"
			}
		}
		var err error
		res.fx, err = a.writeOutcome(ctx, tx, t, ex, ev)
		return err
	})
	return res, err
}

// writeOutcome deletes the attempt's task and appends its event, one commit.
func (a *Attempts) writeOutcome(ctx context.Context, tx *fence.Tx, t Task, ex *store.Exec, ev harvest.Command) (runs.Effects, error) {
	b, ch := &pgx.Batch{}, runs.New()
	store.QueueDeleteTask(b, t.TaskID)
	ch.Ahead = tx.Ahead()
	ch.AppendEvents(ex, []harvest.Command{ev}, true)
	ch.QueueSingle(b)
	if err := tx.CommitWith(ctx, b); err != nil {
		return runs.Effects{}, fmt.Errorf("write: %w", store.Translate(err))
	}
	return ch.Effects(), nil
}

// queueLockAttempt queues the lock of the task; *current is true when
// it is still at attempt t.Attempt and running, and t.Slot is then the
// slot it holds.
func queueLockAttempt(b *pgx.Batch, t *Task, current *bool) {
	store.QueueLockTask(b, t.TaskID, func(l store.LockedTask) {
		*current = l.Attempt == t.Attempt && l.Status == "running" && (l.Expired || !t.expiredOnly)
		t.Slot = l.Slot
	})
}

// maybeRetry reschedules the task when the policy and the
// schedule-to-close deadline allow another attempt, and returns the
// backoff. The failure is recorded at the transaction's workflow time,
// and the next attempt is due exactly the backoff after it.
func (a *Attempts) maybeRetry(ctx context.Context, tx *fence.Tx, t Task, info harvest.ErrorInfo, timeoutType string) (bool, time.Duration, error) {
	policy := t.Options.WithDefaults().Retry
	if timeoutType == TimeoutScheduleToClose || !policy.ShouldRetry(t.Attempt, info) {
		return false, 0, nil
	}
	delay := policy.Backoff(t.Attempt).Truncate(time.Microsecond)
	if info.NextRetryDelayMS > 0 {
		delay = time.Duration(info.NextRetryDelayMS) * time.Millisecond
	}
	lastErr, err := json.Marshal(info)
	if err != nil {
		return false, 0, fmt.Errorf("encode activity error: %w", err)
	}
	retried, err := store.RetryTask(ctx, tx, t.TaskID, delay.Microseconds(), string(lastErr), tx.Ahead().Microseconds())
	if err != nil {
		return false, 0, fmt.Errorf("reschedule activity: %w", err)
	}
	return retried, delay, nil
}

func failureCommand(t Task, info harvest.ErrorInfo, timeoutType string) harvest.Command {
	if timeoutType != "" {
		return harvest.NewCommand(harvest.EventActivityTimedOut, harvest.ActivityTimedOutData{
			ActivityID: t.ActivityID, TimeoutType: timeoutType, Attempt: t.Attempt, Slot: t.Slot})
	}
	return harvest.NewCommand(harvest.EventActivityFailed, harvest.ActivityFailedData{
		ActivityID: t.ActivityID, Error: info, Attempt: t.Attempt, Slot: t.Slot})
}

func deleteTask(ctx context.Context, tx *fence.Tx, id int64) error {
	if err := store.DeleteTask(ctx, tx, id); err != nil {
		return fmt.Errorf("delete activity task: %w", err)
	}
	return nil
}

// canceledActivity is what Heartbeat returns once the workflow cancelled
// the activity.
func canceledActivity() error {
	return &harvest.CanceledError{Reason: errActivityCanceled.Error()}
}

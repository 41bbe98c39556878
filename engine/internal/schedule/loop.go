package schedule

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest/engine/internal/fence"
	"github.com/harvestd/harvest/engine/internal/loop"
	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
)

// The fire loop: the shard's owner fires its due schedules. One fenced
// transaction per schedule locks its row, plans the fires from its
// cursor to now (workflow time, so a test clock drives it), records each
// (a fires row, and for a fire to start an outbox row whose keyed start
// the outbox performs) and advances the cursor past them. A crash before
// the commit leaves the cursor where it was, so the same fires are
// planned again; after it, the outbox rows are durable and the cursor
// never plans them twice. The key dedups a start performed twice.

const (
	// scheduleBatch is how many due schedules one pass fires, and how
	// many fires one schedule's transaction plans.
	scheduleBatch = 32
	// maxMissed bounds the missed nominal times one transaction passes.
	maxMissed = 100_000
	// keptFires is how many fires of a schedule stay recorded.
	keptFires = 100
)

// The fire loop's crash points (the engine's crashpoint.go lists every
// point in order; a fire's start then meets the outbox's).
const (
	// CrashBeforeCommit: a schedule's fires and its new cursor are
	// written, before the commit.
	CrashBeforeCommit loop.CrashPoint = "schedule.before_commit"
	// CrashCommitted: they are committed, the outbox not woken.
	CrashCommitted loop.CrashPoint = "schedule.committed"
)

// fireDue fires up to scheduleBatch due schedules.
func (x *Schedules) fireDue(ctx context.Context) (bool, error) {
	now := x.d.Now()
	due, err := store.DueSchedules(ctx, x.d.Pool, now, scheduleBatch)
	if err != nil {
		return false, fmt.Errorf("find due schedules: %w", err)
	}
	more := len(due) == scheduleBatch
	for _, id := range due {
		again, err := x.fireSchedule(ctx, id, now)
		if err != nil {
			return false, err
		}
		more = more || again
	}
	x.armNextSchedule(ctx)
	return more, nil
}

// fireSchedule plans and records the due fires of one schedule; more
// says some are left for the next transaction.
func (x *Schedules) fireSchedule(ctx context.Context, id string, now time.Time) (more bool, err error) {
	started := false
	err = x.d.Fence.Do(ctx, func(tx *fence.Tx) error {
		s, ok, err := lockSchedule(ctx, tx, id)
		if err != nil || !ok || s.Paused {
			return err
		}
		clock, err := newScheduleClock(s.Spec)
		if err != nil {
			return err
		}
		pending, err := pendingFires(ctx, tx, s)
		if err != nil {
			return err
		}
		p := planFires(s, clock, pending, now)
		more, started = p.more, p.starts() > 0
		return x.recordPlan(ctx, tx, s, p)
	})
	if err != nil {
		return false, err
	}
	if err := x.d.Crash.At(ctx, CrashCommitted); err != nil {
		return false, err
	}
	if started {
		x.d.WakeOutbox(ctx)
	}
	return more, nil
}

// lockSchedule locks a live schedule's row; false if there is none.
func lockSchedule(ctx context.Context, tx *fence.Tx, id string) (shardapi.Schedule, bool, error) {
	s, err := store.LockSchedule(ctx, tx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return s, false, nil
	}
	if err != nil {
		return s, false, fmt.Errorf("lock schedule %s: %w", id, err)
	}
	return s, true, nil
}

// pendingFires counts the generation's fires whose start is in progress.
func pendingFires(ctx context.Context, tx *fence.Tx, s shardapi.Schedule) (int, error) {
	n, err := store.PendingFires(ctx, tx, s.ID, s.Generation)
	if err != nil {
		return 0, fmt.Errorf("count pending fires of %s: %w", s.ID, err)
	}
	return n, nil
}

// plannedFire is one fire a transaction records.
type plannedFire struct {
	key     string // the fire's key when it is not FireKey's (a keyed trigger)
	nominal time.Time
	outcome string // FirePending (to start) or FireSkipped
	reason  string
}

// firePlan is what one transaction does to a schedule.
type firePlan struct {
	fires  []plannedFire
	cursor time.Time
	next   *time.Time // when the next fire is due; nil: never
	more   bool
}

func (p firePlan) starts() int {
	n := 0
	for _, f := range p.fires {
		if f.outcome == FirePending {
			n++
		}
	}
	return n
}

// planFires plans the fires of s due by now: the nominal times after its
// cursor whose due time (nominal time plus jitter) has come, those older
// than the catch-up window skipped as one, each other one started unless
// the overlap policy skips it. pending is how many of its fires are in
// progress.
func planFires(s shardapi.Schedule, clock *scheduleClock, pending int, now time.Time) firePlan {
	p := firePlan{cursor: s.Cursor}
	if p.skipMissed(clock, now.Add(-s.Spec.CatchUpWindow)) {
		p.more, p.next = true, &now
		return p
	}
	for len(p.fires) < scheduleBatch {
		n, ok := clock.next(p.cursor)
		if !ok {
			return p
		}
		due := n.Add(fireJitter(s.ID, s.Generation, n, s.Spec.Jitter))
		if due.After(now) {
			p.next = &due
			return p
		}
		p.cursor = n
		f := overlapFire(s.Spec.Overlap, n, pending)
		if f.outcome == FirePending {
			pending++
		}
		p.fires = append(p.fires, f)
	}
	p.more, p.next = true, &now
	return p
}

// overlapFire is the fire at nominal under an overlap policy while
// pending fires are in progress.
func overlapFire(policy string, nominal time.Time, pending int) plannedFire {
	if policy != shardapi.OverlapAllowAll && pending > 0 {
		return plannedFire{nominal: nominal, outcome: FireSkipped,
			reason: "overlap (" + policy + "): the previous fire is still in progress"}
	}
	return plannedFire{nominal: nominal, outcome: FirePending}
}

// skipMissed passes the nominal times before horizon, recorded as one
// skipped fire at the last of them; true if more are left to pass.
func (p *firePlan) skipMissed(clock *scheduleClock, horizon time.Time) bool {
	var first, last time.Time
	missed := 0
	for ; missed < maxMissed; missed++ {
		n, ok := clock.next(p.cursor)
		if !ok || !n.Before(horizon) {
			break
		}
		if missed == 0 {
			first = n
		}
		last, p.cursor = n, n
	}
	if missed > 0 {
		p.fires = append(p.fires, plannedFire{nominal: last, outcome: FireSkipped,
			reason: fmt.Sprintf("missed: %d fire(s) from %s, older than the catch-up window", missed, first.Format(time.RFC3339))})
	}
	return missed == maxMissed
}

// recordPlan writes a plan in the schedule's transaction: the fires, the
// outbox rows of those to start, the cursor and the next due time.
func (x *Schedules) recordPlan(ctx context.Context, tx *fence.Tx, s shardapi.Schedule, p firePlan) error {
	b := &pgx.Batch{}
	var fr fireRows
	for _, f := range p.fires {
		if _, err := fr.add(s, f, false); err != nil {
			return err
		}
	}
	fr.queue(b)
	store.QueueAdvanceSchedule(b, s.ID, p.cursor, p.next)
	if len(p.fires) > 0 {
		store.QueuePruneFires(b, s.ID, keptFires)
	}
	if err := x.d.Crash.At(ctx, CrashBeforeCommit); err != nil {
		return err
	}
	return tx.Send(ctx, b)
}

// fireRows are the fires rows, and the outbox rows of the fires to
// start, that one transaction inserts.
type fireRows struct {
	fires  store.FireRows
	outbox store.OutboxRows
}

// add adds the row of fire f of s (and its outbox row when it is to
// start) and returns it.
func (r *fireRows) add(s shardapi.Schedule, f plannedFire, triggered bool) (store.Fire, error) {
	row := store.Fire{Key: cmp.Or(f.key, FireKey(s.ID, s.Generation, f.nominal)), ScheduleID: s.ID,
		Generation: s.Generation, Nominal: f.nominal, Outcome: f.outcome, Reason: f.reason, Triggered: triggered,
		WorkflowID: fireWorkflowID(s, f.nominal)}
	r.fires.Add(row)
	if f.outcome != FirePending {
		return row, nil
	}
	return row, r.outbox.Add(uuid.Nil, row.Key, OutboxKind, FireRequest{ScheduleID: s.ID, Generation: s.Generation,
		Nominal: f.nominal, WorkflowName: s.Spec.WorkflowName, WorkflowID: row.WorkflowID, Input: s.Spec.Input, Overlap: s.Spec.Overlap})
}

// queue queues the fires rows' insert, then the outbox rows'.
func (r *fireRows) queue(b *pgx.Batch) {
	r.fires.Queue(b)
	r.outbox.Queue(b)
}

// fireWorkflowID is the workflow id of a fire's run: the schedule's (its
// id by default), with the nominal time added under allow_all, whose runs
// overlap.
func fireWorkflowID(s shardapi.Schedule, nominal time.Time) string {
	base := s.Spec.WorkflowID
	if base == "" {
		base = s.ID
	}
	if s.Spec.Overlap == shardapi.OverlapAllowAll {
		return base + "-" + nominal.UTC().Format(NominalFormat)
	}
	return base
}

// armNextSchedule nudges the loop when the earliest schedule is due
// sooner than the next poll tick.
func (x *Schedules) armNextSchedule(ctx context.Context) {
	next, err := store.NextScheduleAt(ctx, x.d.Pool)
	if err != nil || next == nil {
		return
	}
	x.poll.ArmIn(next.Sub(x.d.Now()))
}

// Trigger fires a schedule now, beside its nominal times (its
// cursor does not move), under its overlap policy; a paused schedule
// fires too. With a client key the fire's key is
// TriggerKey(id, generation, key): a repeat finds the recorded fire
// (read-only; deduplicated true) and fires nothing, while the fire is
// among the schedule's recorded ones; beyond them the keyed start still
// answers the same run within the idempotency window.
func (x *Schedules) Trigger(ctx context.Context, id, key string) (fire shardapi.ScheduleFire, deduplicated bool, err error) {
	if key != "" {
		if f, ok, err := x.triggeredFire(ctx, x.d.Pool, id, key); err != nil || ok {
			return f, ok, err
		}
	}
	nominal := x.d.Now().UTC().Truncate(time.Millisecond)
	err = x.d.Fence.Do(ctx, func(tx *fence.Tx) error {
		s, ok, err := lockSchedule(ctx, tx, id)
		if err != nil || !ok {
			return notFound(err, id)
		}
		if key != "" {
			// Under the schedule's lock: a concurrent same-key trigger
			// committed first.
			if f, ok, err := fireByKey(ctx, tx, TriggerKey(id, s.Generation, key)); err != nil || ok {
				fire, deduplicated = f, ok
				return err
			}
		}
		fire, err = x.recordTrigger(ctx, tx, s, nominal, key)
		return err
	})
	if err == nil && !deduplicated && fire.Outcome == FirePending {
		x.d.WakeOutbox(ctx)
	}
	return fire, deduplicated, err
}

// recordTrigger records a trigger's fire (and its outbox row) in the
// schedule's transaction.
func (x *Schedules) recordTrigger(ctx context.Context, tx *fence.Tx, s shardapi.Schedule, nominal time.Time, key string) (shardapi.ScheduleFire, error) {
	pending, err := pendingFires(ctx, tx, s)
	if err != nil {
		return shardapi.ScheduleFire{}, err
	}
	f := overlapFire(s.Spec.Overlap, nominal, pending)
	if key != "" {
		f.key = TriggerKey(s.ID, s.Generation, key)
	}
	var fr fireRows
	row, err := fr.add(s, f, true)
	if err != nil {
		return shardapi.ScheduleFire{}, err
	}
	b := &pgx.Batch{}
	fr.queue(b)
	fire := shardapi.ScheduleFire{Key: row.Key, NominalTime: nominal, Outcome: f.outcome, Reason: f.reason, Triggered: true,
		WorkflowID: row.WorkflowID}
	return fire, tx.Send(ctx, b)
}

// triggeredFire finds the fire a keyed trigger of the live schedule id
// recorded; false when there is none.
func (x *Schedules) triggeredFire(ctx context.Context, q store.Querier, id, key string) (shardapi.ScheduleFire, bool, error) {
	generation, err := store.ScheduleGeneration(ctx, q, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return shardapi.ScheduleFire{}, false, &shardapi.NotFoundError{What: "schedule", ID: id}
	}
	if err != nil {
		return shardapi.ScheduleFire{}, false, fmt.Errorf("read schedule %s: %w", id, err)
	}
	return fireByKey(ctx, q, TriggerKey(id, generation, key))
}

// fireByKey reads a recorded fire; false when there is none.
func fireByKey(ctx context.Context, q store.Querier, key string) (shardapi.ScheduleFire, bool, error) {
	f, err := store.FireByKey(ctx, q, key)
	if errors.Is(err, pgx.ErrNoRows) {
		return f, false, nil
	}
	if err != nil {
		return f, false, fmt.Errorf("read fire %s: %w", key, err)
	}
	return f, true, nil
}

// notFound is err, or schedule id's NotFoundError when err is nil.
func notFound(err error, id string) error {
	if err != nil {
		return err
	}
	return &shardapi.NotFoundError{What: "schedule", ID: id}
}

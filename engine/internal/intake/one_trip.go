package intake

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/internal/wftask"
	"github.com/harvestd/harvest/engine/shardapi"
	"github.com/harvestd/harvest/internal/metrics"
)

// Start batches in one round trip.
//
// A start batch in two round trips (sendTwoTrips) first claims its keys,
// reads the slot holders of its workflow ids and the transaction's now(),
// then runs the new runs' first tasks and sends their writes with the
// COMMIT. Under load most batches find every key fresh and no slot held,
// so the answers of the first round trip are known before it is sent. A
// one-trip batch assumes them: it runs the first tasks at its estimate of
// the database's time and sends BEGIN, the fence, the claims, the checks
// and every write with the COMMIT together, each assumption checked in SQL
// by harvest_expect (migration 007). One that does not hold raises
// SQLSTATE HR001 before the COMMIT, so nothing is written; the batch then
// runs again in two trips, which handle taken claims, held slots, moved
// keys and a lost lease as before. The round trip saved is most of a
// batch's fixed cost at moderate load (docs/performance.md).
//
// The assumptions, in order: the lease epoch is the engine's (the fence);
// the estimated time is no later than the transaction's now() and at most
// MaxClockLag before it; no routing key moved (placed starts); the
// concurrency slots the batch takes are free (limited workflows'
// starts); every key's claim was made (none was live); no workflow id's
// slot is held.
//
// The last needs no statement of its own: every run a batch creates holds
// its workflow id's slot, so the unique index on the slot holders
// (harvest_executions_slot) refuses the run's insert when another run
// holds it, and the batch takes that refusal (SQLSTATE 23505 on that
// index) as the assumption's (heldSlot). A new run whose first task gave
// its slot up would escape the index: a batch with one misses at once.
//
// The time: a workflow's clock is the time of its history's events
// (replay.go), so the first tasks must know the time their events will be
// stamped with. A one-trip batch stamps its events with its estimate (the
// node's clock moved by the offset fence.Clock measured, less clockLead)
// instead of now(); the check keeps it behind now(), so a run's history
// never goes back in time (every later transaction's now() is later
// still), and close to it. With a clock ahead of the database's
// (Config.Clock) the stamps are the estimate plus the transaction's
// offset, and the check is made on the estimate: the offset never
// decreases, so the history still never goes back.
//
// After a batch missed because a key or slot was taken, the next
// OneTripPause batches take two trips straight away: a load of replays
// would otherwise pay for both.

// The assumptions a one-trip batch checks, as harvest_expect names them.
const (
	expectFence   = "the lease epoch"
	expectTime    = "the start time"
	expectPlaced  = "no routing key moved"
	expectFresh   = "every key fresh"
	expectNoSlots = "no slot held"
	// ExpectHolding: every new run holds its slot (heldSlot's premise).
	ExpectHolding = "every new run holding its slot"
)

// slotIndex is the unique index of the runs that hold their workflow
// ids' slots (migration 001).
const slotIndex = "harvest_executions_slot"

// heldSlot reads a refusal of a one-trip batch's run insert by the slot
// index as the assumption it breaks (no slot held); other errors pass.
func heldSlot(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == slotIndex {
		return &store.ExpectError{What: expectNoSlots}
	}
	return err
}

// Taken says a key, a slot or a routing key was taken: what replays and
// reused workflow ids make fail, unlike a lost lease or a clock off.
func Taken(a *store.ExpectError) bool {
	return a.What == expectFresh || a.What == expectNoSlots || a.What == expectPlaced
}

const (
	// clockLead is how far before the estimate of the database's time a
	// one-trip batch stamps its events: room for the estimate's error (a
	// sample's round trip, up to the fastest of a window).
	clockLead = 2 * time.Millisecond
	// MaxClockLag bounds how far before its transaction's now() a batch's
	// stamp may be: a first task runs for at most firstTaskBudget.
	MaxClockLag = firstTaskBudget + 2*time.Second
	// OneTripPause is how many batches after a miss take two trips.
	OneTripPause = 32
	// EarlyStale is how much older than its batch's time an early first
	// task may be and still be used (a batch stuck behind a slow one runs
	// the task again rather than fail its time check).
	EarlyStale = MaxClockLag - firstTaskBudget - 500*time.Millisecond
)

// oneTripFits says whether p may be sent in one trip: it creates runs,
// the clock has been measured, and no miss paused the one-trip path.
func (in *Intake) oneTripFits(p *batchPlan) bool {
	if !in.d.Clock.Measured() {
		return false
	}
	if in.OneTripPaused.Load() > 0 {
		in.OneTripPaused.Add(-1)
		return false
	}
	for _, f := range p.fate {
		if f == fateCreate {
			return true
		}
	}
	return false
}

// oneTripMissed counts a miss, and pauses the one-trip path when a key or
// a slot was taken (a lost lease or a clock off stops nothing here: the
// two-trip batch that follows fences, and measures the clock again).
func (in *Intake) oneTripMissed(err error) {
	metrics.StartBatches.WithLabelValues("one_trip_missed").Inc()
	in.BatchTrips[2].Add(1)
	var a *store.ExpectError
	if errors.As(err, &a) && Taken(a) {
		in.OneTripPaused.Store(OneTripPause)
	}
	in.d.Log.Debug().Err(err).Msg("one-trip start batch missed, retried in two")
}

// sendOneTrip assumes every start of p that may create a run does (its
// key fresh, its slot free, its routing key not moved), runs the first
// tasks at the estimated time, and sends the whole transaction at once.
func (in *Intake) sendOneTrip(ctx context.Context, p *batchPlan, first firstTaskRunner, beforeCommit func()) error {
	tx, b, err := in.d.Fence.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Release(context.WithoutCancel(ctx))
	// Taken once the connection is ours: waiting for it uses no margin.
	at, ok := in.d.Clock.At(clockLead)
	if !ok {
		return &store.ExpectError{What: "a measured database clock"}
	}
	p.ahead, p.dbNow = tx.Ahead(), at.Add(tx.Ahead()) // workflow time
	store.QueueExpectEpoch(b, in.d.Fence.Epoch.Load(), expectFence)
	p.queueAssumptions(b, in.d.Window, &in.hints)
	var (
		dbNow, sent time.Time
	)
	p.oneTrip, p.stampLo, p.stampHi = true, p.dbNow, p.dbNow
	commit := func(ctx context.Context, b *pgx.Batch) error { return heldSlot(tx.CommitWith(ctx, b)) }
	err = p.write(ctx, b, commit, in.d.Window, first, func() {
		beforeCommit()
		// Last before the COMMIT: the first tasks have stamped the events
		// (in workflow time: the check takes the clock's offset off).
		store.QueueExpectTime(b, p.stampHi.Add(-p.ahead), p.stampLo.Add(-p.ahead), MaxClockLag.Milliseconds(), expectTime, &dbNow)
		sent = time.Now() // the batch goes out next
	})
	if !dbNow.IsZero() && !sent.IsZero() {
		in.d.Clock.Observe(sent, dbNow)
	}
	return err
}

// queueAssumptions marks every start that may create a run as claimed and
// free, and queues the checks of that: the placement locks and the check
// that no routing key moved, the flow locks and the check that the slots
// the batch takes are free (flow_slots.go), and the claims with the check
// that each was made (the slot index checks that no slot is held:
// heldSlot).
func (p *batchPlan) queueAssumptions(b *pgx.Batch, window time.Duration, hints *flowHints) {
	c := p.columns()
	for i := range p.reqs {
		if p.fate[i] == fateCreate && p.reqs[i].IdempotencyKey != "" {
			p.claimed[i] = true
		}
	}
	if len(c.placedNames) > 0 {
		store.QueuePlacementLocks(b, c.placements(), placementLockClass)
		store.QueueExpectNoneMoved(b, c.placements(), expectPlaced)
	}
	p.queueFlowAssumptions(b, hints)
	if len(c.keys) > 0 {
		store.QueueExpectKeysClaimed(b, c.claimKeys(), int(p.shard), window.Milliseconds(), expectFresh)
	}
}

// SampleClock measures the database's clock once (see fence.Clock).
func (in *Intake) SampleClock(ctx context.Context) {
	sent := time.Now()
	db, err := store.Now(ctx, in.d.Pool)
	if err != nil {
		in.d.Log.Debug().Err(err).Msg("database clock not measured")
		return
	}
	in.d.Clock.Observe(sent, db)
}

// earlyStart is what a start's own goroutine prepares while the batch
// before its own is in flight (prepareEarly): its execution id, its
// WorkflowStarted event, and its first task run at at, the time its events
// get if a one-trip batch commits them. A two-trip batch keeps the id and
// the event and runs the task again at its transaction's now().
type earlyStart struct {
	id      uuid.UUID
	at      time.Time
	started harvest.Command
	res     harvest.TaskResult
	ran     bool // the task ran to a result (res)
}

func (s *earlyStart) done() bool { return s != nil && s.ran }

// startedOr is the start's WorkflowStarted event, made early or now.
func (s *earlyStart) startedOr(req StartRequest) harvest.Command {
	if s != nil {
		return s.started
	}
	return startedCommand(req)
}

// PrepareEarly runs the first task of a start headed for a batch in the
// start's own goroutine, when the batch is likely to go in one trip: off
// the batcher, whose one goroutine every start of the shard waits for. A
// task that fails or runs out of time is left to the batch.
func (in *Intake) PrepareEarly(ctx context.Context, req *StartRequest) {
	if req.dueAt != nil || !in.mayTakeSlot(req) || in.OneTripPaused.Load() > 0 {
		return
	}
	at, ok := in.d.Clock.At(clockLead)
	if !ok {
		return
	}
	at = at.Add(in.d.Ahead()) // workflow time
	s := &earlyStart{id: shardapi.NewExecutionID(in.d.ShardID), at: at, started: startedCommand(*req)}
	req.early = s
	ex := &store.Exec{ID: s.id, WorkflowName: req.WorkflowName, WorkflowID: req.WorkflowID, State: shardapi.StateRunning,
		NextEventID: 1, CreatedAt: at, ChainID: s.id}
	started := harvest.Event{EventID: 0, Type: s.started.Type, Data: s.started.Data, Timestamp: at}
	ctx, cancel := context.WithTimeout(ctx, firstTaskBudget)
	defer cancel()
	res, err := in.d.WF.RunTask(ctx, wftask.Claimed{Ex: ex, DBNow: at, History: []harvest.Event{started}})
	if err == nil {
		s.res, s.ran = res, true
	}
}

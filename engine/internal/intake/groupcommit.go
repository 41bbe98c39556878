package intake

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/fence"
	"github.com/harvestd/harvest/engine/internal/loop"
	"github.com/harvestd/harvest/engine/internal/runs"
	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
	"github.com/harvestd/harvest/internal/metrics"
)

// Group commit of starts.
//
// Concurrent fresh starts of a shard share transactions: StartWorkflow hands
// a prepared start (fresh checks passed, workflow id minted) to the engine's
// start batcher, one goroutine that takes whatever starts are queued (up to
// Config.StartBatchMax, never waiting for more), runs them as one fenced
// transaction of multi-row statements, answers each, and repeats; while one
// batch commits, the next queues up. A batch has the round trips of a single
// start (fence + claims + slot holders; runs + events + callbacks; commit)
// whatever its size.
//
// Per-request semantics are those of startTx:
//   - a key repeated inside the batch is claimed once; the repeats get the
//     first request's answer, Deduplicated;
//   - a key with a live claim (committed earlier or by a concurrent start)
//     gets the claim's run, Deduplicated, like lookupClaim;
//   - a start whose workflow id has a slot holder, or repeats another's
//     inside the batch, runs through the single path (startSingle) after the
//     batch commits, where the reuse/conflict matrix applies; so does every
//     start of a batch that fails as a whole (e.g. a unique violation from a
//     racing single-path start), except that a lost lease fails them all.

// StartCall is one start waiting for its batch.
type StartCall struct {
	req   StartRequest
	reply chan StartReply // buffered: the batcher never blocks on it
}

// StartReply is the batch's answer to one start.
type StartReply struct {
	Res shardapi.StartResult
	Err error
	// Single sends the start through the single path.
	Single bool
}

// runStartBatcher starts the start batcher of this run of the engine;
// StartBatchMax 1 (or the fault suite's broken build) turns it off.
func (in *Intake) runStartBatcher(ctx context.Context) {
	if in.d.StartBatchMax <= 1 || skipStartClaim {
		in.Starts.Store(nil)
		return
	}
	g := loop.NewBatcher[*StartCall](in.d.StartBatchMax)
	in.Starts.Store(g)
	in.d.Spawn(ctx, func(ctx context.Context) { g.Run(ctx, 1, func(calls []*StartCall) { in.answerStarts(ctx, calls) }) })
}

// groupStart runs a prepared start through the batcher, or alone when
// group commit is off. A caller whose ctx ends before the batcher takes its
// start gets ctx.Err(); a taken start gets its batch's answer.
func (in *Intake) groupStart(ctx context.Context, req StartRequest) (shardapi.StartResult, error) {
	g := in.Starts.Load()
	if g == nil {
		return in.startSingle(ctx, req)
	}
	in.PrepareEarly(ctx, &req)
	c := &StartCall{req: req, reply: make(chan StartReply, 1)}
	switch err := g.Submit(ctx, c); {
	case errors.Is(err, loop.ErrBatcherStopped):
		return in.startSingle(ctx, req) // the single path says why
	case err != nil:
		return shardapi.StartResult{}, err
	}
	return in.FromReply(ctx, req, <-c.reply)
}

// FromReply turns a batch's reply into the start's outcome.
func (in *Intake) FromReply(ctx context.Context, req StartRequest, r StartReply) (shardapi.StartResult, error) {
	if r.Single {
		return in.startSingle(ctx, req)
	}
	return r.Res, r.Err
}

// answerStarts commits one group of starts and answers each caller.
func (in *Intake) answerStarts(ctx context.Context, calls []*StartCall) {
	reqs := make([]StartRequest, len(calls))
	for i, c := range calls {
		reqs[i] = c.req
	}
	for i, r := range in.StartBatch(ctx, reqs) {
		calls[i].reply <- r
	}
}

// StartBatch runs prepared starts as one transaction and answers each: in
// one round trip when its starts look fresh (one_trip.go), else, or when
// that finds they were not, in two.
func (in *Intake) StartBatch(runCtx context.Context, reqs []StartRequest) []StartReply {
	metrics.StartBatchSize.Observe(float64(len(reqs)))
	// A batch answers many callers: bound it even if the database hangs.
	ctx, cancel := context.WithTimeout(runCtx, in.d.LeaseTTL)
	defer cancel()
	if p := newBatchPlan(reqs, in.d.ShardID); in.oneTripFits(p) {
		out, err := in.commitBatch(runCtx, ctx, p, in.sendOneTrip)
		switch {
		case err == nil:
			in.BatchTrips[0].Add(1)
			metrics.StartBatches.WithLabelValues("one_trip").Inc()
			return out
		case !errors.Is(err, store.ErrExpectation):
			in.BatchTrips[3].Add(1)
			metrics.StartBatches.WithLabelValues("one_trip_failed").Inc()
			return out
		}
		in.oneTripMissed(err)
	}
	in.BatchTrips[1].Add(1)
	metrics.StartBatches.WithLabelValues("two_trips").Inc()
	out, _ := in.commitBatch(runCtx, ctx, newBatchPlan(reqs, in.d.ShardID), in.sendTwoTrips)
	return out
}

// batchSender runs a plan's transaction: it settles p.dbNow and the fate
// of each start, then calls p.write with first and beforeCommit.
type batchSender func(ctx context.Context, p *batchPlan, first firstTaskRunner, beforeCommit func()) error

// firstTaskRunner runs the first tasks of a batch's new runs (see write).
type firstTaskRunner func(*runColumns) (func(*pgx.Batch), error)

// commitBatch runs p's transaction with send and answers its starts. err
// is send's: store.ErrExpectation means nothing was written and out is nil.
func (in *Intake) commitBatch(runCtx, ctx context.Context, p *batchPlan, send batchSender) (out []StartReply, err error) {
	var (
		first *firstTasks
		open  []uuid.UUID
	)
	// Before the transaction begins: no earlier than the now() the
	// batch's claims get.
	gen, seen := in.claims.generation(), time.Now()
	err = send(ctx, p, func(runs *runColumns) (func(*pgx.Batch), error) {
		f, err := in.runFirstTasks(ctx, runs, p.dbNow, p.ahead, p.oneTrip)
		if err != nil {
			return nil, err
		}
		first = f
		p.stampLo, p.stampHi = slices.MinFunc(runs.at, time.Time.Compare), slices.MaxFunc(runs.at, time.Time.Compare)
		return f.queue, nil
	}, func() {
		// Before the COMMIT: from then on any transaction (a dispatched
		// activity's, a terminate's) may close them.
		open = p.openRuns()
		in.d.Watch.Opened(open...)
	})
	if err != nil {
		in.d.Watch.Unopened(open...)
	}
	in.d.Settle(runCtx, first.effects(), err)
	switch {
	case errors.Is(err, store.ErrExpectation):
		return nil, err
	case err != nil:
		in.d.Log.Debug().Err(err).Int("starts", len(p.reqs)).Msg("start batch failed, its starts run alone")
		return p.replies(err), err
	}
	p.cacheClaims(in.claims, gen, seen, in.d.Window)
	p.noteFlow(&in.hints)
	p.countFlow()
	return p.replies(nil), nil
}

// sendTwoTrips claims the batch's keys and reads its slot holders behind
// the fence, then writes and commits in a second round trip.
func (in *Intake) sendTwoTrips(ctx context.Context, p *batchPlan, first firstTaskRunner, beforeCommit func()) error {
	var sent time.Time
	return in.d.Fence.DoBatch(ctx, func(b *pgx.Batch) {
		p.queueClaimsAndHolders(b, in.d.Window)
		sent = time.Now() // the connection is ours: the batch goes out next
	},
		func(tx *fence.Tx) error {
			in.d.Clock.Observe(sent, p.dbNow)
			p.ahead, p.dbNow = tx.Ahead(), p.dbNow.Add(tx.Ahead()) // workflow time
			return p.write(ctx, &pgx.Batch{}, tx.CommitWith, in.d.Window, first, beforeCommit)
		})
}

// cacheClaims caches the live claims the committed batch made or found,
// as the replays of their keys will be answered (see claimCache).
func (p *batchPlan) cacheClaims(c *claimCache, gen uint64, seen time.Time, window time.Duration) {
	for i, r := range p.reqs {
		switch {
		case p.fate[i] == fateCreate && p.claimed[i]:
			c.put(gen, r.IdempotencyKey, p.res[i], seen, window)
		case p.fate[i] == fateClaimed:
			c.put(gen, r.IdempotencyKey, p.res[i], seen, p.left[i])
		}
	}
}

// openRuns are the runs the committed batch created and left open.
func (p *batchPlan) openRuns() []uuid.UUID {
	var ids []uuid.UUID
	for i, f := range p.fate {
		if f == fateCreate && !shardapi.IsTerminal(p.res[i].State) {
			ids = append(ids, p.ids[i])
		}
	}
	return ids
}

// batchFate is what a batch does with one of its starts.
type batchFate int

const (
	fateCreate  batchFate = iota // create the run in the batch
	fateClaimed                  // the key has a live claim: answer with its run
	fateRepeat                   // repeats an earlier start's key in the batch
	fateSingle                   // run through the single path after the batch
	fateMoved                    // a newer placement epoch took the key: refused
)

type nameKey struct{ name, key string }

// batchPlan is one batch's starts and what becomes of each.
type batchPlan struct {
	shard   uint16
	reqs    []StartRequest
	ids     []uuid.UUID // execution id minted per start
	fate    []batchFate
	first   []int // fateRepeat: the index of the start whose key it repeats
	res     []shardapi.StartResult
	byKey   map[nameKey]int        // (name, key) → first start with it
	bySlot  map[nameKey]int        // (name, workflow id) → first start with it
	claimed []bool                 // the batch claimed the start's key
	left    []time.Duration        // fateClaimed: the time the found claim has left
	holder  []bool                 // the start's workflow id has a slot holder
	moved   []*shardapi.MovedError // a newer epoch redirected the start's routing key
	slot    []bool                 // a one-trip batch assumed the start takes a free slot
	use     map[nameKey]*keyUse    // a two-trip batch's limited keys, read under their locks
	fresh   int                    // runs created
	dbNow   time.Time              // the transaction's start (a one-trip batch: its estimate), in workflow time
	ahead   time.Duration          // the transaction's clock offset (fence.Tx.Ahead)
	// oneTrip: the batch is sent in one trip, and the early first tasks of
	// its starts are used (one_trip.go).
	oneTrip bool
	// atomic: the batch commits all its starts or none (start_atomic.go).
	atomic bool
	// stampLo, stampHi: the earliest and the latest time the batch's
	// events are stamped with (set by its first tasks).
	stampLo, stampHi time.Time
}

// newBatchPlan dedups keys and workflow ids inside the batch: only the
// first start of a key claims it, only the first of a workflow id may
// create a run in the batch (ON CONFLICT cannot touch a row twice in one
// statement, and a second run of an id needs the reuse/conflict matrix).
func newBatchPlan(reqs []StartRequest, shard uint16) *batchPlan {
	n := len(reqs)
	p := &batchPlan{
		shard: shard, reqs: reqs, ids: make([]uuid.UUID, n), fate: make([]batchFate, n), first: make([]int, n),
		res: make([]shardapi.StartResult, n), byKey: make(map[nameKey]int, n), bySlot: make(map[nameKey]int, n),
		claimed: make([]bool, n), left: make([]time.Duration, n), holder: make([]bool, n), moved: make([]*shardapi.MovedError, n),
		slot: make([]bool, n),
	}
	for i, r := range reqs {
		p.ids[i] = shardapi.NewExecutionID(shard)
		if r.early != nil {
			p.ids[i] = r.early.id
		}
		if r.IdempotencyKey != "" {
			k := nameKey{r.WorkflowName, r.IdempotencyKey}
			if j, ok := p.byKey[k]; ok {
				p.fate[i], p.first[i] = fateRepeat, j
				continue
			}
			p.byKey[k] = i
		}
		s := nameKey{r.WorkflowName, r.WorkflowID}
		if _, ok := p.bySlot[s]; ok {
			p.fate[i] = fateSingle
			continue
		}
		p.bySlot[s] = i
		p.fate[i] = fateCreate
	}
	return p
}

// planColumns are the statement arguments of a plan's starts that may
// create a run: their keys to claim, their slots, their placements.
type planColumns struct {
	names, keys, routings []string // keyed starts
	ids                   []uuid.UUID
	epochs                []int64
	wnames, wids          []string // starts whose slot may be held (their ids not minted)
	placedNames           []string // placed starts
	placedRoutings        []string
	placedEpochs          []int64
	placedIdx             []int32
}

// claimKeys are the keys of c to claim.
func (c planColumns) claimKeys() store.ClaimKeys {
	return store.ClaimKeys{Names: c.names, Keys: c.keys, IDs: c.ids, Routings: c.routings, Epochs: c.epochs}
}

// placements are the routing keys of c's placed starts.
func (c planColumns) placements() store.Placements {
	return store.Placements{Names: c.placedNames, Routings: c.placedRoutings, Epochs: c.placedEpochs, Idx: c.placedIdx}
}

func (p *batchPlan) columns() planColumns {
	var c planColumns
	for i, r := range p.reqs {
		if p.fate[i] != fateCreate {
			continue
		}
		routing, epoch := "", int64(0)
		if r.Placement != nil {
			routing, epoch = r.Placement.RoutingKey, int64(r.Placement.Epoch)
			c.placedNames, c.placedRoutings = append(c.placedNames, r.WorkflowName), append(c.placedRoutings, routing)
			c.placedEpochs, c.placedIdx = append(c.placedEpochs, epoch), append(c.placedIdx, int32(i))
		}
		if r.IdempotencyKey != "" {
			c.names, c.keys, c.ids = append(c.names, r.WorkflowName), append(c.keys, r.IdempotencyKey), append(c.ids, p.ids[i])
			c.routings, c.epochs = append(c.routings, routing), append(c.epochs, epoch)
		}
		if !r.mintedID {
			c.wnames, c.wids = append(c.wnames, r.WorkflowName), append(c.wids, r.WorkflowID)
		}
	}
	return c
}

// queueClaimsAndHolders queues, behind the fence, the claim of every key
// the batch may create a run for (the takeover of an expired claim
// included), then the lookup of the slot holders of their workflow ids.
func (p *batchPlan) queueClaimsAndHolders(b *pgx.Batch, window time.Duration) {
	c := p.columns()
	p.queuePlacementChecks(b, c)
	p.queueFlowReads(b)
	// now() is the transaction's start: the created_at of every event the
	// batch appends, which the runs' first tasks see (runFirstTasks).
	store.QueueNow(b, &p.dbNow)
	if len(c.keys) > 0 {
		store.QueueClaimKeys(b, c.claimKeys(), int(p.shard), window.Milliseconds(), func(name, key string) {
			if i, ok := p.byKey[nameKey{name, key}]; ok {
				p.claimed[i] = true
			}
		})
	}
	if len(c.wids) > 0 {
		store.QueueSlotHolders(b, c.wnames, c.wids, func(name, workflowID string) {
			if i, ok := p.bySlot[nameKey{name, workflowID}]; ok {
				p.holder[i] = true
			}
		})
	}
}

// queuePlacementChecks queues, for the starts placed under a catalog epoch
// (see shardapi.Placement), their routing keys' placement locks and the read of
// their redirects; a start whose key a newer epoch redirected is moved.
func (p *batchPlan) queuePlacementChecks(b *pgx.Batch, c planColumns) {
	if len(c.placedNames) == 0 {
		return
	}
	store.QueuePlacementLocks(b, c.placements(), placementLockClass)
	store.QueueMovedKeys(b, c.placements(), func(i int32, epoch int64, shard int32) {
		p.moved[i] = &shardapi.MovedError{Shard: uint16(shard), Epoch: uint64(epoch)}
	})
}

// write decides each start from the claims and holders, then queues on b
// and sends with commit (b, then COMMIT, in one round trip): drops the
// claims of starts sent to the single path, reads the runs of live claims,
// and inserts the new runs, their WorkflowStarted events and their
// callbacks. first runs before the inserts are queued: it may change the
// new runs' columns (their first workflow task ran), and queues its own
// writes after them. beforeCommit runs just before the round trip.
func (p *batchPlan) write(ctx context.Context, b *pgx.Batch, commit func(context.Context, *pgx.Batch) error,
	window time.Duration, first firstTaskRunner, beforeCommit func()) error {
	w, err := p.decide()
	if err != nil {
		return err
	}
	if p.atomic {
		if err := p.atomicRefusal(); err != nil {
			return err
		}
	}
	after, err := p.runFirst(&w.runs, first)
	if err != nil {
		return err
	}
	p.queueWrites(b, w, window)
	after(b)
	beforeCommit()
	if err := commit(ctx, b); err != nil {
		return fmt.Errorf("start batch: %w", store.Translate(err))
	}
	return nil
}

// batchWrites is what a batch writes besides its first tasks' writes:
// the claims it drops and looks up, the runs it creates and their
// callbacks.
type batchWrites struct {
	drop     struct{ names, keys []string }
	dropIDs  []uuid.UUID
	look     struct{ names, keys []string }
	runs     runColumns
	cbIDs    []uuid.UUID
	cbIdx    []int32
	cbURL    []string
	cbHeader []string
}

// decide settles the fate of every start that may create a run, from its
// claim, its slot holder and its placement, and collects the writes.
func (p *batchPlan) decide() (*batchWrites, error) {
	w := &batchWrites{}
	for i, r := range p.reqs {
		if p.fate[i] != fateCreate || !p.settleFate(w, i, r) {
			continue
		}
		if err := p.create(w, i, r); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// settleFate reports whether start i is created in the batch; when it is
// not, it sets the start's fate and adds the drop or the lookup of its
// claim to w.
func (p *batchPlan) settleFate(w *batchWrites, i int, r StartRequest) bool {
	keyed := r.IdempotencyKey != ""
	switch {
	case p.moved[i] != nil:
		p.fate[i] = fateMoved // its key was not claimed: nothing to undo
	case keyed && !p.claimed[i]:
		p.fate[i] = fateClaimed
		w.look.names, w.look.keys = append(w.look.names, r.WorkflowName), append(w.look.keys, r.IdempotencyKey)
	case p.holder[i]:
		p.fate[i] = fateSingle
		if keyed {
			w.drop.names, w.drop.keys = append(w.drop.names, r.WorkflowName), append(w.drop.keys, r.IdempotencyKey)
			w.dropIDs = append(w.dropIDs, p.ids[i])
		}
	default:
		return true
	}
	return false
}

// create adds start i's run and callbacks to w, and answers it.
func (p *batchPlan) create(w *batchWrites, i int, r StartRequest) error {
	held := p.holds(i, r)
	w.runs.add(i, p.ids[i], r, p.dbNow, held)
	for j, cb := range r.Callbacks {
		headers, err := json.Marshal(cb.Headers)
		if err != nil {
			return fmt.Errorf("encode callback headers: %w", err)
		}
		w.cbIDs, w.cbIdx = append(w.cbIDs, p.ids[i]), append(w.cbIdx, int32(j))
		w.cbURL, w.cbHeader = append(w.cbURL, cb.URL), append(w.cbHeader, string(headers))
	}
	p.res[i] = shardapi.StartResult{ExecutionID: p.ids[i], WorkflowName: r.WorkflowName, WorkflowID: r.WorkflowID,
		State: r.stateOf(held), StartedFresh: true}
	p.fresh++
	return nil
}

// runFirst runs the new runs' first tasks (first), answers each start
// with its run's state, and returns what queues the tasks' writes. A
// one-trip batch whose new run gave its slot up misses (ExpectHolding).
func (p *batchPlan) runFirst(runs *runColumns, first firstTaskRunner) (func(*pgx.Batch), error) {
	if runs.len() == 0 {
		return func(*pgx.Batch) {}, nil
	}
	after, err := first(runs)
	if err != nil {
		return nil, err
	}
	for j, i := range runs.reqIdx {
		p.res[i].State = runs.states[j]
	}
	if p.oneTrip && slices.Contains(runs.holdsSlot, false) {
		return nil, &store.ExpectError{What: ExpectHolding}
	}
	return after, nil
}

// queueWrites queues w: the dropped claims, the lookups of live claims,
// the new runs with their timeout timers, their callbacks.
func (p *batchPlan) queueWrites(b *pgx.Batch, w *batchWrites, window time.Duration) {
	if len(w.dropIDs) > 0 {
		store.QueueDropClaims(b, w.drop.names, w.drop.keys, w.dropIDs)
	}
	if len(w.look.keys) > 0 {
		p.queueLookups(b, w.look.names, w.look.keys, window)
	}
	if w.runs.len() > 0 {
		w.runs.queue(b)
		p.queueTimeouts(b, &w.runs)
	}
	if len(w.cbIDs) > 0 {
		store.QueueInsertCallbacks(b, w.cbIDs, w.cbIdx, w.cbURL, w.cbHeader)
	}
}

// queueLookups queues the read of the live claims of the starts whose
// keys the batch found claimed; a claim gone since sends its start
// through the single path.
func (p *batchPlan) queueLookups(b *pgx.Batch, names, keys []string, window time.Duration) {
	found := make(map[int]bool, len(keys))
	store.QueueLookupClaims(b, names, keys, window.Milliseconds(), func(n int, c store.Claim) {
		k := nameKey{names[n], keys[n]}
		i := p.byKey[k]
		found[i] = true
		p.res[i] = claimResult(k.name, c)
		p.left[i] = secondsLeft(c.LeftS)
	}, func() {
		// A claim gone since (it cannot expire within a batch, but
		// correctness over speed): the single path decides.
		for i := range p.reqs {
			if p.fate[i] == fateClaimed && !found[i] {
				p.fate[i] = fateSingle
			}
		}
	})
}

// runColumns are the columns of the runs a batch creates, one slice each.
// A run whose first workflow task ran in the batch (ran) is inserted as
// the task left it: its next event id, and its state, output and error if
// the task closed it.
type runColumns struct {
	reqIdx               []int // the start each run answers
	ids                  []uuid.UUID
	names, wids, queues  []string
	inputs, memos, keys  []*string
	dueAt                []*time.Time
	eventType, eventData []string

	ran    []bool
	next   []int64
	states []string
	// flows: each run's flow (nil under no limit; held: it takes a slot,
	// else it is created QUEUED), and whether some run has one.
	flows         []*store.Flow
	limited       bool
	outputs, errs []*string
	holdsSlot     []bool
	// callbacks: some run has completion callbacks (the batch inserts them).
	callbacks bool
	// at stamps each run's events: the batch's time, or the time its early
	// first task saw (runFirstTasks).
	at    []time.Time
	early []*earlyStart
}

func (c *runColumns) len() int { return len(c.ids) }

func (c *runColumns) add(i int, id uuid.UUID, req StartRequest, at time.Time, held bool) {
	started := req.early.startedOr(req)
	c.at, c.early = append(c.at, at), append(c.early, req.early)
	c.reqIdx = append(c.reqIdx, i)
	c.ran = append(c.ran, false)
	c.next = append(c.next, 1)
	c.states = append(c.states, req.stateOf(held))
	var f *store.Flow
	if req.flow != nil {
		f = new(*req.flow)
		f.Held = held
		c.limited = true
	}
	c.flows = append(c.flows, f)
	c.outputs, c.errs = append(c.outputs, nil), append(c.errs, nil)
	c.holdsSlot = append(c.holdsSlot, true)
	c.ids = append(c.ids, id)
	c.names = append(c.names, req.WorkflowName)
	c.wids = append(c.wids, req.WorkflowID)
	c.queues = append(c.queues, cmp.Or(req.Queue, harvest.DefaultQueue))
	c.inputs = append(c.inputs, textOrNil(string(runs.InputOrNull(req.Input))))
	c.memos = append(c.memos, textOrNil(string(req.Memo)))
	c.keys = append(c.keys, textOrNil(req.IdempotencyKey))
	c.dueAt = append(c.dueAt, req.dueAt)
	c.eventType = append(c.eventType, string(started.Type))
	c.eventData = append(c.eventData, string(started.Data))
	c.callbacks = c.callbacks || len(req.Callbacks) > 0
}

// queue queues the insert of the runs as their first tasks left them
// (their WorkflowStarted events join the tasks' own: addStarted).
func (c *runColumns) queue(b *pgx.Batch) {
	r := store.NewRuns{IDs: c.ids, Names: c.names, WorkflowIDs: c.wids, Queues: c.queues,
		Inputs: c.inputs, Memos: c.memos, Keys: c.keys, StartAt: c.dueAt, Ran: c.ran, Next: c.next, States: c.states,
		Outputs: c.outputs, Errors: c.errs, HoldsSlot: c.holdsSlot}
	if !c.limited {
		store.QueueInsertRuns(b, r)
		return
	}
	store.QueueInsertRunsWithFlows(b, r, runFlows(c.flows))
}

// runFlows are the flow columns of runs with flows (nil: under no limit),
// each limited run ranked among the runs before it of its workflow, key
// and fairness key.
func runFlows(flows []*store.Flow) store.RunFlows {
	n := len(flows)
	out := store.RunFlows{Keys: make([]*string, n), Fairness: make([]*string, n), Priority: make([]*int16, n),
		Weight: make([]*int16, n), Rank: make([]int64, n)}
	seen := make(map[store.Flow]int64)
	for i, f := range flows {
		if f == nil {
			continue
		}
		turn := store.Flow{Name: f.Name, Key: f.Key, Fairness: f.Fairness}
		if !f.Held {
			seen[turn] += f.Step() // a run that takes its slot at once takes no turn
		}
		out.Keys[i], out.Fairness[i], out.Priority[i], out.Weight[i], out.Rank[i] = &f.Key, &f.Fairness, &f.Priority, &f.Weight, seen[turn]
	}
	return out
}

// queueTimeouts queues the timeout timers of the runs the batch creates
// that are still running, due from the times their events are stamped.
func (p *batchPlan) queueTimeouts(b *pgx.Batch, runs *runColumns) {
	for j, i := range runs.reqIdx {
		if !shardapi.IsTerminal(runs.states[j]) {
			queueTimeoutTimers(b, runs.ids[j], runs.at[j], p.reqs[i].timeouts)
		}
	}
}

func textOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// replies answers every start of the batch. A batch that failed as a whole
// sends its starts through the single path, but a lost lease (or a stopped
// engine) is every start's answer.
func (p *batchPlan) replies(err error) []StartReply {
	out := make([]StartReply, len(p.reqs))
	if err != nil {
		var lost *shardapi.OwnershipLostError
		final := errors.As(err, &lost) || errors.Is(err, shardapi.ErrNotRunning)
		for i := range out {
			if final {
				out[i].Err = err
			} else {
				out[i].Single = true
			}
		}
		return out
	}
	for i := range out {
		switch p.fate[i] {
		case fateCreate, fateClaimed:
			out[i].Res = p.res[i]
		case fateSingle:
			out[i].Single = true
		case fateMoved:
			out[i].Err = p.moved[i]
		}
	}
	for i := range out {
		if p.fate[i] != fateRepeat {
			continue
		}
		out[i] = out[p.first[i]]
		if !out[i].Single && out[i].Err == nil {
			out[i].Res.Deduplicated, out[i].Res.StartedFresh = true, false
		}
	}
	return out
}

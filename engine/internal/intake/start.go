package intake

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/fence"
	"github.com/harvestd/harvest/engine/internal/runs"
	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
	"github.com/harvestd/harvest/internal/metrics"
)

// StartRequest starts a workflow run.
type StartRequest struct {
	WorkflowName string
	// WorkflowID is the business id; empty mints a random one.
	WorkflowID string
	Input      json.RawMessage
	Queue      string
	Memo       json.RawMessage
	// IdempotencyKey, when set, dedups the start within the window on
	// (WorkflowName, IdempotencyKey), ahead of every other check.
	IdempotencyKey string
	ReusePolicy    shardapi.ReusePolicy
	ConflictPolicy shardapi.ConflictPolicy
	// AllowTerminate permits policy cells that terminate a running run.
	AllowTerminate bool
	// Delay and StartAt (at most one) make the first workflow task due
	// later; the run exists at once.
	Delay   *time.Duration
	StartAt *time.Time
	// ExecutionTimeout and RunTimeout, when set, override the workflow's
	// default timeouts (harvest.WorkflowTimeouts; 0 removes one): the run
	// closes TIMED_OUT once one passes (see timeout.go).
	ExecutionTimeout *time.Duration
	RunTimeout       *time.Duration
	// Callbacks are POSTed when the run closes (at least once).
	Callbacks []shardapi.Callback
	// Placement, when set, is the catalog epoch this start was placed
	// under: the start is refused (shardapi.MovedError) if a newer epoch claimed
	// its routing key here for another shard.
	Placement *shardapi.Placement
	// Probed says the caller already looked the key up (the read-only
	// replay probe) and found no live claim, or will look it up if the
	// start fails (a replay must never fail a fresh start's checks):
	// StartWorkflow skips its own probe. Without a probe, a live claim is
	// still answered as a replay, by the start batch.
	Probed bool
	// FreshChecks runs last among the checks of a genuinely fresh start
	// (no live claim of the key).
	FreshChecks func(ctx context.Context) error
	// ConcurrencyKey names the start's key under its workflow's
	// concurrency limit (it wins over the limit's key pointer); Priority
	// (1 first … 5 last, 0: harvest.PriorityDefault) and FairnessKey order
	// the dispatch of its run while it waits, FairnessWeight (1 …
	// harvest.MaxFairnessWeight, 0: 1) how often its fairness key takes a
	// turn. A workflow under no limit ignores them (after checking them).
	ConcurrencyKey string
	Priority       int
	FairnessKey    string
	FairnessWeight int

	dueAt    *time.Time   // resolved from Delay/StartAt by the fresh checks
	flow     *store.Flow  // resolved by the fresh checks: the workflow is limited
	flowMax  int64        // with flow: the limit's most running runs per key
	timeouts []runTimeout // resolved by the fresh checks
	// mintedID: the engine minted WorkflowID (a random UUID), so no run
	// can hold its slot yet and a start batch does not look for one.
	mintedID bool
	// early is what the start's own goroutine prepared for a one-trip
	// batch (nil: nothing).
	early *earlyStart
}

// LookupStartKey is the read-only replay probe: the run a live claim of
// (name, key) points to. ok is false when the key is unclaimed or expired.
// A claim it has seen live is answered from memory (see claimCache).
func (in *Intake) LookupStartKey(ctx context.Context, name, key string) (shardapi.StartResult, bool, error) {
	if res, ok := in.cachedReplay(name, key); ok {
		return res, true, nil
	}
	gen, seen := in.claims.generation(), time.Now()
	res, left, err := in.lookupStartKey(ctx, name, key)
	if errors.Is(err, shardapi.ErrNotFound) {
		return shardapi.StartResult{}, false, nil
	}
	if err != nil {
		return shardapi.StartResult{}, false, err
	}
	in.keys.add(name, key)
	if in.d.Fence.Owning.Load() {
		in.claims.put(gen, key, res, seen, left)
	}
	return res, true, nil
}

// cachedReplay is the cached answer to a replay of (name, key), while
// this engine owns the shard.
func (in *Intake) cachedReplay(name, key string) (shardapi.StartResult, bool) {
	if !in.d.Fence.Owning.Load() {
		return shardapi.StartResult{}, false
	}
	return in.claims.get(name, key, time.Now(), func(r shardapi.StartResult) bool { return in.d.Watch.IsOpen(r.ExecutionID) })
}

func lookupClaim(ctx context.Context, q store.Querier, name, key string, windowMS int64) (shardapi.StartResult, error) {
	res, _, err := lookupClaimLeft(ctx, q, name, key, windowMS)
	return res, err
}

// lookupClaimLeft is lookupClaim with the time the claim has left to live
// by the database's clock.
func lookupClaimLeft(ctx context.Context, q store.Querier, name, key string, windowMS int64) (shardapi.StartResult, time.Duration, error) {
	c, err := store.LookupClaim(ctx, q, name, key, windowMS)
	if err != nil {
		return shardapi.StartResult{}, 0, store.Translate(err)
	}
	return claimResult(name, c), secondsLeft(c.LeftS), nil
}

// claimResult is the answer to a replay of a key of workflow name whose
// live claim is c.
func claimResult(name string, c store.Claim) shardapi.StartResult {
	res := shardapi.StartResult{ExecutionID: c.ExecutionID, WorkflowName: name, WorkflowID: deref(c.WorkflowID),
		State: deref(c.State), Deduplicated: true}
	setLatest(&res, c.Latest, c.LatestState)
	return res
}

// secondsLeft turns a claim's seconds to live into a duration.
func secondsLeft(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// maxSlotRaces bounds retries after losing the workflow id slot race.
const maxSlotRaces = 5

// StartWorkflow starts a run, deduplicating by idempotency key first and
// then applying the reuse/conflict matrix to the run holding the workflow
// id. N concurrent starts with one key create exactly one run.
func (in *Intake) StartWorkflow(ctx context.Context, req StartRequest) (shardapi.StartResult, error) {
	res, err := in.startWorkflow(ctx, req)
	recordStart(res, err)
	if err == nil && req.IdempotencyKey != "" && res.ExecutionID != uuid.Nil {
		in.keys.add(req.WorkflowName, req.IdempotencyKey)
	}
	return res, err
}

func recordStart(res shardapi.StartResult, err error) {
	var conflict *shardapi.ConflictError
	switch {
	case errors.As(err, &conflict):
		metrics.Starts.WithLabelValues("rejected").Inc()
	case err != nil:
	case res.Deduplicated:
		metrics.Starts.WithLabelValues("deduplicated").Inc()
		metrics.StartDedupHits.Inc()
	case res.StartedFresh:
		metrics.Starts.WithLabelValues("fresh").Inc()
	default:
		metrics.Starts.WithLabelValues("attached").Inc()
	}
}

func (in *Intake) startWorkflow(ctx context.Context, req StartRequest) (shardapi.StartResult, error) {
	if err := in.d.Fence.CheckOwning(); err != nil {
		return shardapi.StartResult{}, err
	}
	if req.WorkflowName == "" {
		return shardapi.StartResult{}, fmt.Errorf("workflow name is empty: %w", shardapi.ErrInvalidArgument)
	}
	if req.IdempotencyKey != "" && !req.Probed {
		if res, ok, err := in.LookupStartKey(ctx, req.WorkflowName, req.IdempotencyKey); err != nil || ok {
			return res, err
		}
	}
	if err := in.FreshChecks(ctx, &req); err != nil {
		return shardapi.StartResult{}, err
	}
	if req.WorkflowID == "" {
		req.WorkflowID, req.mintedID = uuid.NewString(), true
	}
	return in.groupStart(ctx, req)
}

// startSingle runs one prepared start in a transaction of its own.
func (in *Intake) startSingle(ctx context.Context, req StartRequest) (shardapi.StartResult, error) {
	for attempt := 1; ; attempt++ {
		res, err := in.startTx(ctx, req)
		if errors.Is(err, shardapi.ErrDuplicate) && attempt < maxSlotRaces {
			continue // lost a race for the workflow id slot: re-read the winner
		}
		return res, err
	}
}

// FreshChecks runs, in this order, every check a fresh start needs and a
// keyed replay skips: registered workflow, input schema, delay/start_at,
// timeouts, flow control (priority, keys, the limit's key), completion
// callbacks (SSRF), admission gate, the caller's own checks.
func (in *Intake) FreshChecks(ctx context.Context, req *StartRequest) error {
	if !in.d.Reg.HasWorkflow(req.WorkflowName) {
		return fmt.Errorf("workflow %q: %w", req.WorkflowName, shardapi.ErrUnknownWorkflow)
	}
	if err := in.d.Reg.ValidateInput(req.WorkflowName, req.Input); err != nil {
		return err
	}
	due, err := in.schedule(req.Delay, req.StartAt)
	if err != nil {
		return err
	}
	req.dueAt = due
	if err := in.resolveTimeouts(req); err != nil {
		return err
	}
	if err := in.resolveFlow(req); err != nil {
		return err
	}
	if len(req.Callbacks) > shardapi.MaxCallbacks {
		return fmt.Errorf("at most %d completion callbacks: %w", shardapi.MaxCallbacks, shardapi.ErrInvalidArgument)
	}
	for _, cb := range req.Callbacks {
		if err := in.d.Policy.CheckURL(ctx, cb.URL); err != nil {
			return err
		}
	}
	if err := in.checkGate(ctx, req.WorkflowName); err != nil {
		return err
	}
	if req.FreshChecks != nil {
		return req.FreshChecks(ctx)
	}
	return nil
}

// startAtPastMax is how far in the past start_at may be (clock skew).
const startAtPastMax = 5 * time.Minute

// schedule resolves delay/start_at into the first task's due time, in
// workflow time.
func (in *Intake) schedule(delay *time.Duration, startAt *time.Time) (*time.Time, error) {
	switch {
	case delay != nil && startAt != nil:
		return nil, fmt.Errorf("send delay or start_at, not both: %w", shardapi.ErrInvalidArgument)
	case delay != nil:
		if *delay < 0 {
			return nil, fmt.Errorf("delay %s is negative: %w", *delay, shardapi.ErrInvalidArgument)
		}
		due := in.d.Now().Add(*delay)
		return &due, nil
	case startAt != nil:
		if in.d.Now().Sub(*startAt) > startAtPastMax {
			return nil, fmt.Errorf("start_at %s is more than %s in the past: %w", startAt.Format(time.RFC3339), startAtPastMax, shardapi.ErrInvalidArgument)
		}
		return startAt, nil
	}
	return nil, nil
}

func (in *Intake) startTx(ctx context.Context, req StartRequest) (shardapi.StartResult, error) {
	var (
		res     shardapi.StartResult
		closed  runs.Effects // of a replaced run
		newID   = shardapi.NewExecutionID(in.d.ShardID)
		claimed = true
		prior   *store.Exec
		moved   *shardapi.MovedError
		use     *keyUse
		held    bool
	)
	// One round trip: fence, placement check, flow lock and use, claim the
	// key, lock the run holding the id.
	queue := func(b *pgx.Batch) {
		if req.Placement != nil {
			queuePlacementCheck(b, req.WorkflowName, req.Placement, &moved)
		}
		queueSingleFlow(b, req, &use)
		if req.IdempotencyKey != "" && !skipStartClaim {
			store.QueueClaimKey(b, req.WorkflowName, req.IdempotencyKey, newID, int(in.d.ShardID),
				in.d.Window.Milliseconds(), &claimed)
		}
		queueSlotHolder(b, req.WorkflowName, req.WorkflowID, &prior)
	}
	err := in.d.Fence.DoBatch(ctx, queue, func(tx *fence.Tx) error {
		if moved != nil {
			return moved
		}
		if !claimed {
			var err error
			res, err = lookupClaim(ctx, tx, req.WorkflowName, req.IdempotencyKey, in.d.Window.Milliseconds())
			return err
		}
		switch DecideStart(prior.StateOrNone(), req.ReusePolicy, req.ConflictPolicy) {
		case DecideReject:
			return &shardapi.ConflictError{ExistingExecutionID: prior.ID.String(), ExistingState: prior.State}
		case DecideAttach:
			res = shardapi.StartResult{ExecutionID: prior.ID, WorkflowName: req.WorkflowName, WorkflowID: req.WorkflowID, State: prior.State}
			return in.pointClaim(ctx, tx, req, prior.ID)
		case DecideTerminateAndStart:
			if !req.AllowTerminate {
				return shardapi.ErrTerminateNotAllowed
			}
			var err error
			if closed, err = runs.CloseNow(ctx, tx, prior, shardapi.StateTerminated, "replaced by a new start", newID.String()); err != nil {
				return err
			}
		}
		if err := releaseSlot(ctx, tx, prior); err != nil {
			return err
		}
		held = use.take(req)
		res = shardapi.StartResult{ExecutionID: newID, WorkflowName: req.WorkflowName, WorkflowID: req.WorkflowID, State: req.stateOf(held), StartedFresh: true}
		return createRun(ctx, tx, newID, req, held)
	})
	if err != nil {
		return shardapi.StartResult{}, err
	}
	if res.StartedFresh {
		countFlow(req, res.State)
		in.started(ctx, req, held)
	}
	in.d.Settle(ctx, closed, nil)
	return res, nil
}

// queueSlotHolder queues the lock of the run holding (name, workflow_id).
func queueSlotHolder(b *pgx.Batch, name, workflowID string, prior **store.Exec) {
	r := &store.Exec{}
	store.QueueLockSlotHolder(b, name, workflowID, append([]any{&r.ID}, r.Targets()...), func() { *prior = r })
}

// createRun inserts a fresh run with its WorkflowStarted event, its first
// workflow task, its timeout timers and its callbacks, in one round trip;
// a limited workflow's run holds a slot or waits QUEUED for one.
func createRun(ctx context.Context, tx *fence.Tx, id uuid.UUID, req StartRequest, held bool) error {
	queue := cmp.Or(req.Queue, harvest.DefaultQueue)
	started := startedCommand(req)
	b := &pgx.Batch{}
	store.QueueInsertRun(b, newRun(id, queue, req, held))
	store.QueueStartedEvent(b, id, string(started.Type), string(started.Data), tx.Ahead().Microseconds())
	queueTimeoutTimersNow(b, tx, id, req.timeouts)
	for i, cb := range req.Callbacks {
		headers, err := json.Marshal(cb.Headers)
		if err != nil {
			return fmt.Errorf("encode callback headers: %w", err)
		}
		store.QueueInsertCallback(b, id, i, cb.URL, string(headers))
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("create run: %w", store.Translate(err))
	}
	return nil
}

// pointClaim makes the request's claim point at an attached run, so
// retries of the key return that run.
func (in *Intake) pointClaim(ctx context.Context, tx *fence.Tx, req StartRequest, id uuid.UUID) error {
	if req.IdempotencyKey == "" {
		return nil
	}
	if err := store.PointClaim(ctx, tx, req.WorkflowName, req.IdempotencyKey, id); err != nil {
		return fmt.Errorf("point start key: %w", err)
	}
	return nil
}

// lockSlotHolder locks the run holding (name, workflow_id), if any.
func lockSlotHolder(ctx context.Context, tx *fence.Tx, name, workflowID string) (*store.Exec, error) {
	id, found, err := store.FindSlotHolder(ctx, tx, name, workflowID)
	if err != nil {
		return nil, fmt.Errorf("find run of %s/%s: %w", name, workflowID, err)
	}
	if !found {
		return nil, nil
	}
	return store.LockExec(ctx, tx, id)
}

func releaseSlot(ctx context.Context, tx *fence.Tx, prior *store.Exec) error {
	if prior == nil {
		return nil
	}
	if err := store.ReleaseSlot(ctx, tx, prior.ID); err != nil {
		return fmt.Errorf("release slot of %s: %w", prior.ID, err)
	}
	return nil
}

func insertExecution(ctx context.Context, tx *fence.Tx, id uuid.UUID, req StartRequest) (*store.Exec, error) {
	queue := req.Queue
	if queue == "" {
		queue = harvest.DefaultQueue
	}
	ex := &store.Exec{ID: id, WorkflowName: req.WorkflowName, WorkflowID: req.WorkflowID, State: req.stateOf(false), ChainID: id}
	at, err := store.InsertRun(ctx, tx, newRun(id, queue, req, false))
	if err != nil {
		return nil, fmt.Errorf("insert execution: %w", store.Translate(err))
	}
	ex.CreatedAt = at
	return ex, nil
}

// newRun is the run row of a start of run id on queue; a limited
// workflow's run holds its slot (held) or waits QUEUED.
func newRun(id uuid.UUID, queue string, req StartRequest, held bool) store.NewRun {
	r := store.NewRun{ID: id, Name: req.WorkflowName, WorkflowID: req.WorkflowID, Queue: queue,
		Input: store.NullJSON(runs.InputOrNull(req.Input)), Memo: store.NullJSON(req.Memo), Key: nullString(req.IdempotencyKey),
		StartAt: req.dueAt}
	if req.flow != nil {
		f := *req.flow
		f.Held = held
		r.Flow = &f
	}
	return r
}

func startedCommand(req StartRequest) harvest.Command {
	return harvest.NewCommand(harvest.EventWorkflowStarted, harvest.WorkflowStartedData{
		WorkflowName: req.WorkflowName, WorkflowID: req.WorkflowID, Input: runs.InputOrNull(req.Input),
		Queue: req.Queue, IdempotencyKey: req.IdempotencyKey,
	})
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

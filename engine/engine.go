package engine

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/activity"
	"github.com/harvestd/harvest/engine/internal/deferred"
	"github.com/harvestd/harvest/engine/internal/fence"
	"github.com/harvestd/harvest/engine/internal/flow"
	"github.com/harvestd/harvest/engine/internal/intake"
	"github.com/harvestd/harvest/engine/internal/limits"
	"github.com/harvestd/harvest/engine/internal/loop"
	"github.com/harvestd/harvest/engine/internal/maint"
	"github.com/harvestd/harvest/engine/internal/outbox"
	"github.com/harvestd/harvest/engine/internal/read"
	"github.com/harvestd/harvest/engine/internal/runs"
	"github.com/harvestd/harvest/engine/internal/schedule"
	"github.com/harvestd/harvest/engine/internal/update"
	"github.com/harvestd/harvest/engine/internal/wftask"
	"github.com/harvestd/harvest/internal/batchop"
)

// Engine runs one shard. Create it with New, then Start it; the request
// methods (StartWorkflow, Signal, …) work only while it holds the lease.
type Engine struct {
	pool *pgxpool.Pool
	reg  *harvest.Registry
	cfg  Config
	// lim is the flow control limits in force: the registry's, overridden
	// by cfg.Limits.
	lim *limits.Set
	log zerolog.Logger

	// fence holds the shard lease and runs fenced transactions; epoch
	// and owning are its Epoch and Owning.
	fence  *fence.Fence
	epoch  *atomic.Int64
	owning *atomic.Bool

	// timers, callbacks, sweeper and analyzer are the maintenance services
	// (internal/maint).
	timers    *maint.Timers
	callbacks *maint.Callbacks
	sweeper   *maint.Sweeper
	analyzer  *maint.Analyzer
	// outbox performs the commands that act on other runs
	// (internal/outbox).
	outbox *outbox.Outbox
	// schedules are the shard's schedules (internal/schedule).
	schedules *schedule.Schedules
	// deferred are the shard's deferred starts (internal/deferred).
	deferred *deferred.Starts
	// flow promotes queued runs (internal/flow).
	flow *flow.Dispatcher

	// bus wakes the loops.
	bus *loop.Bus
	// act runs activity attempts (internal/activity).
	act *activity.Attempts
	// closed wakes the waiters of runs that close (runs.Watch).
	closed *runs.Watch
	// read answers the reads of runs (internal/read).
	read *read.Reader
	// wf runs workflow tasks and caches the state of recently active
	// runs (internal/wftask).
	wf *wftask.Runner
	// in admits starts, signals, cancels and terminates
	// (internal/intake).
	in *intake.Intake
	// upd performs updates (internal/update).
	upd *update.Updater
	// clock estimates the database's time (the fence's and the one-trip
	// start batches').
	clock fence.Clock

	mu      sync.Mutex
	running bool
	cancel  context.CancelCauseFunc
	loops   sync.WaitGroup
}

// New returns an engine for the shard database behind pool.
func New(pool *pgxpool.Pool, reg *harvest.Registry, cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if err := registerKeeper(reg); err != nil {
		return nil, err
	}
	if err := batchop.Register(reg); err != nil {
		return nil, err
	}
	if cfg.Activities == nil {
		cfg.Activities = reg
	}
	e := &Engine{
		pool:   pool,
		reg:    reg,
		lim:    limits.New(reg, cfg.Limits),
		cfg:    cfg,
		log:    cfg.Logger.With().Str("component", "engine").Uint16("shard_id", cfg.ShardID).Logger(),
		bus:    loop.NewBus(),
		closed: runs.NewWatch(),
	}
	if e.cfg.Outbound == nil {
		e.cfg.Outbound = selfOutbound{e}
	}
	runner, err := batchop.NewRunner(e.cfg.Outbound, e.cfg.Activities)
	if err != nil {
		return nil, err
	}
	e.cfg.Activities = runner
	e.fence = fence.New(fence.Config{Pool: pool, ShardID: cfg.ShardID, NodeID: cfg.NodeID, LeaseTTL: cfg.LeaseTTL,
		TakeOver: cfg.TakeOver, Ahead: e.ahead, Clock: &e.clock, Lost: e.lostLease, Log: e.log})
	e.epoch, e.owning = &e.fence.Epoch, &e.fence.Owning
	e.newMaint()
	e.read = e.newReader()
	e.wf = e.newRunner()
	e.act = e.newActivities()
	e.in = e.newIntake()
	e.upd = e.newUpdater()
	e.closed.OnClose = e.wf.Drop
	e.newOutbox()
	e.newSchedules()
	e.newDeferred()
	e.newFlow()
	return e, nil
}

// ShardID is the shard this engine runs.
func (e *Engine) ShardID() uint16 { return e.cfg.ShardID }

// Epoch is the lease epoch held (0 before Start).
func (e *Engine) Epoch() int64 { return e.epoch.Load() }

// Owning reports whether the engine holds the lease and runs its loops.
func (e *Engine) Owning() bool { return e.owning.Load() }

// Registry is the registry the engine runs workflows from.
func (e *Engine) Registry() *harvest.Registry { return e.reg }

// Start takes the shard lease and starts the shard's loops: workflow
// tasks, activities, timers, lease renewal, the claim sweeper and the
// intake's batchers (group commit, see internal/intake/groupcommit.go).
// The loops run until Stop or until the lease is lost; ctx only bounds
// Start.
func (e *Engine) Start(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.running {
		return errors.New("engine already started")
	}
	epoch, err := e.fence.Acquire(ctx)
	if err != nil {
		return err
	}
	e.closed.Forget()
	e.in.Forget()
	e.wf.Purge()
	e.in.SampleClock(ctx)
	e.flow.Look(ctx)
	e.epoch.Store(epoch)
	e.owning.Store(true)
	loopCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	e.cancel = cancel
	e.running = true
	e.spawn(loopCtx, e.fence.Run)
	for range e.cfg.WorkflowWorkers {
		e.spawn(loopCtx, e.wf.Run)
	}
	e.spawn(loopCtx, e.act.Run)
	e.spawn(loopCtx, e.timers.Run)
	e.spawn(loopCtx, e.sweeper.Run)
	e.spawn(loopCtx, e.callbacks.Run)
	e.spawn(loopCtx, e.outbox.Run)
	e.spawn(loopCtx, e.schedules.Run)
	e.spawn(loopCtx, e.deferred.Run)
	e.spawn(loopCtx, e.flow.Run)
	e.spawn(loopCtx, e.analyzer.Run)
	e.spawn(loopCtx, e.clockLoop)
	e.in.Run(loopCtx)
	e.act.RunCompletions(loopCtx)
	e.bus.All()
	e.log.Info().Int64("epoch", epoch).Msg("shard lease acquired")
	return nil
}

// Stop stops the loops, waits for them (running activities are cancelled
// and left to be reclaimed) and releases the lease so a successor can start
// at once.
func (e *Engine) Stop() {
	if !e.halt(errStopped) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.LeaseTTL)
	defer cancel()
	if err := e.fence.Release(ctx); err != nil {
		e.log.Warn().Err(err).Msg("lease release failed")
	}
}

// Abandon stops the loops like Stop but keeps the lease, as a crashed
// process would leave it: a successor must wait for its expiry or take it
// over. For fault drills and tests.
func (e *Engine) Abandon() { e.halt(errStopped) }

var (
	errStopped   = errors.New("engine stopped")
	errLeaseLost = errors.New("shard lease lost")
)

// halt cancels the loops and waits for them; false if not running.
func (e *Engine) halt(cause error) bool {
	e.mu.Lock()
	if !e.running {
		e.mu.Unlock()
		return false
	}
	e.running = false
	e.owning.Store(false)
	e.closed.Forget()
	e.in.Forget()
	e.cancel(cause)
	e.mu.Unlock()
	e.loops.Wait()
	e.wf.Purge()
	e.act.Stop()
	return true
}

// lostLease stops every loop at once; it may be called from a loop.
func (e *Engine) lostLease(current *OwnershipLostError) {
	if !e.owning.CompareAndSwap(true, false) {
		return
	}
	e.closed.Forget()
	e.in.Forget()
	e.wf.Purge()
	e.log.Warn().Int64("epoch", e.epoch.Load()).Int64("new_epoch", current.Epoch).
		Str("owner", current.Owner).Msg("shard lease lost, stopping shard loops")
	e.mu.Lock()
	if e.cancel != nil {
		e.cancel(errLeaseLost)
	}
	e.mu.Unlock()
}

func (e *Engine) spawn(ctx context.Context, loop func(context.Context)) {
	e.loops.Add(1)
	go func() {
		defer e.loops.Done()
		loop(ctx)
	}()
}

// IdempotencyWindow is how long this engine's start keys deduplicate.
func (e *Engine) IdempotencyWindow() time.Duration { return e.cfg.IdempotencyWindow }

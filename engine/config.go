package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/harvestd/harvest/engine/internal/fence"
	"github.com/harvestd/harvest/engine/internal/loop"
)

// Defaults of Config.
const (
	// IdempotencyWindowDefault is how long a start idempotency key dedups.
	IdempotencyWindowDefault = 24 * time.Hour
	// WorkflowWorkersDefault is the number of concurrent workflow tasks.
	WorkflowWorkersDefault = 16
	// WorkflowTaskBatchDefault is the most workflow tasks one worker runs
	// in one transaction.
	WorkflowTaskBatchDefault = 8
	// ActivityWorkersDefault bounds concurrently running activities of a
	// shard. Activities mostly wait on other services, and a slot is held
	// only while the activity's code runs (see internal/activity/dispatch.go).
	ActivityWorkersDefault = 64
	// PollIntervalDefault is the backstop poll for due tasks and timers.
	PollIntervalDefault = time.Second
	// LeaseTTLDefault is how long a lease lasts without renewal.
	LeaseTTLDefault = 15 * time.Second
	// SweepIntervalDefault is how often expired start claims are purged.
	SweepIntervalDefault = time.Minute
	// SweepBatchDefault is how many claims one sweep statement deletes.
	SweepBatchDefault = 1000
	// WorkflowTaskTimeoutDefault bounds workflow code between two yields.
	WorkflowTaskTimeoutDefault = 10 * time.Second
	// QueryTimeoutDefault bounds a query: history load, replay, handler.
	QueryTimeoutDefault = 10 * time.Second
	// TaskRetryMaxDefault caps the backoff of a failing workflow task.
	TaskRetryMaxDefault = time.Minute
	// StartBatchMaxDefault is the most starts one group commit carries.
	StartBatchMaxDefault = 128
	// StateCacheEntriesDefault is the most runs whose live state a shard
	// keeps between workflow tasks.
	StateCacheEntriesDefault = 4096
	// StateCacheBytesDefault bounds the event data the cached runs of a
	// shard applied (64 MiB).
	StateCacheBytesDefault = 64 << 20
	// BatchInputBytesDefault bounds the inputs one deferred batch
	// collects, as JSON text (see Config.BatchInputBytes).
	BatchInputBytesDefault = 16 << 20
	// StartBatchMaxLimit is the largest StartBatchMax Validate accepts.
	StartBatchMaxLimit = 4096
)

// Config configures one shard engine. Zero fields take the defaults above.
type Config struct {
	// ShardID is the shard this database is (0..65534). Required to match
	// what the database recorded on first acquisition.
	ShardID uint16
	// NodeID names the owner in the lease row. Required.
	NodeID string
	// TakeOver, when set, is asked about a lease held by another node that
	// has not expired; true takes it over (the caller knows that node is
	// gone, e.g. gossip declared it dead). Fencing keeps this safe even if
	// the caller is wrong: the old holder can no longer commit.
	TakeOver func(holder string) bool
	// IdempotencyWindow is the start idempotency key window.
	IdempotencyWindow time.Duration
	// WorkflowWorkers is the number of concurrent workflow tasks.
	WorkflowWorkers int
	// WorkflowTaskBatch is the most due workflow tasks a worker claims
	// and commits in one transaction (1: one at a time).
	WorkflowTaskBatch int
	// ActivityWorkers bounds concurrently running activities (default
	// ActivityWorkersDefault).
	ActivityWorkers int
	// PollInterval is the backstop poll for due work.
	PollInterval time.Duration
	// LeaseTTL is the lease lifetime; it is renewed every LeaseTTL/3.
	LeaseTTL time.Duration
	// SweepInterval is how often expired start claims are purged.
	SweepInterval time.Duration
	// SweepBatch is the number of claims one sweep statement deletes.
	SweepBatch int
	// WorkflowTaskTimeout bounds workflow code between two yields.
	WorkflowTaskTimeout time.Duration
	// QueryTimeout bounds a query (history load, replay and handler); past
	// it Query returns ErrQueryTimeout.
	QueryTimeout time.Duration
	// TaskRetryMax caps the retry backoff of a failing workflow task.
	TaskRetryMax time.Duration
	// StartBatchMax is the most starts one group commit transaction
	// carries (see internal/intake/groupcommit.go): concurrent starts of the shard share a
	// transaction, taken as they queue up, without waiting for more.
	// 1 turns group commit off (every start commits alone); at most
	// StartBatchMaxLimit.
	StartBatchMax int
	// HistoryPageBytes bounds the event data, as JSON text, of one
	// History page and of Describe's events (default
	// HistoryPageBytesDefault); a page always has at least one event.
	HistoryPageBytes int64
	// BatchInputBytes bounds the inputs, as JSON text, a deferred batch
	// collects (default BatchInputBytesDefault): a start whose input
	// would take its key's open batch past it closes that batch, due at
	// once, and opens the next. A batch is past it only when its one
	// start's input is, so its run's input stays within PostgreSQL's
	// limits whatever batch_max_size is.
	BatchInputBytes int64
	// StateCacheEntries is the most runs whose live state (coroutines,
	// positions, pending commands) the shard keeps between workflow tasks,
	// so that a task applies only the events recorded since instead of
	// replaying the whole history (default StateCacheEntriesDefault;
	// negative: no cache, every task replays). Least recently used runs
	// are evicted first (see internal/wftask/statecache.go).
	StateCacheEntries int
	// StateCacheBytes bounds the cache by the bytes of event data its runs
	// applied, an approximation of their memory (default
	// StateCacheBytesDefault).
	StateCacheBytes int64
	// Limits, when set, gives the flow control limits set at run time
	// (the cluster's /admin/limits): for the names it lists they replace
	// the limits the registry's workflows and activities declare, and a
	// zero limit lifts a declared one. It is read as limits are needed:
	// it must be cheap and safe for concurrent use. Nil: only the
	// declared limits.
	Limits func() RuntimeLimits
	// CallbackPolicy decides which addresses completion callbacks may
	// reach (default: no loopback, private, link-local or metadata).
	CallbackPolicy CallbackPolicy
	// Logger is the engine's logger; the engine adds shard_id.
	Logger zerolog.Logger
	// Clock is the clock workflows run on: history event times, durable
	// timers, activity retry backoff and activity timeouts (see clock.go).
	// Default RealClock, the database's clock; a test clock (harvesttest)
	// moves it ahead. Leases, start claims and the idempotency window
	// always run on the database's clock.
	Clock Clock
	// Activities runs activity attempts (default: the engine's registry).
	// A test kit wraps it to replace activities with fakes.
	Activities ActivityRunner
	// HTTPActivities finds the HTTP activities registered at run time
	// (internal/activity/http.go); nil: none, every activity is the
	// ActivityRunner's.
	HTTPActivities ActivityResolver

	// Outbound performs the keyed starts, signals, cancels and
	// terminates of the outbox (child workflows, signals to other
	// workflows, parent close policies) through the deployment's routing;
	// nil: on this engine itself, for a single-shard deployment.
	Outbound Outbound

	// crashHook stops the engine at a named step boundary: tests only
	// (crashpoint.go).
	crashHook loop.Crash
	// batchClosedHook runs in a deferred batch start's transaction after
	// it closed its key's open batch to make room: tests only, standing
	// in for concurrent starts that fill the batch opened next.
	batchClosedHook func(ctx context.Context, tx *fence.Tx) error
}

func (c Config) withDefaults() Config {
	c.IdempotencyWindow = cmp.Or(c.IdempotencyWindow, IdempotencyWindowDefault)
	c.WorkflowWorkers = cmp.Or(c.WorkflowWorkers, WorkflowWorkersDefault)
	c.WorkflowTaskBatch = cmp.Or(c.WorkflowTaskBatch, WorkflowTaskBatchDefault)
	c.ActivityWorkers = cmp.Or(c.ActivityWorkers, ActivityWorkersDefault)
	c.PollInterval = cmp.Or(c.PollInterval, PollIntervalDefault)
	c.LeaseTTL = cmp.Or(c.LeaseTTL, LeaseTTLDefault)
	c.SweepInterval = cmp.Or(c.SweepInterval, SweepIntervalDefault)
	c.SweepBatch = cmp.Or(c.SweepBatch, SweepBatchDefault)
	c.WorkflowTaskTimeout = cmp.Or(c.WorkflowTaskTimeout, WorkflowTaskTimeoutDefault)
	c.QueryTimeout = cmp.Or(c.QueryTimeout, QueryTimeoutDefault)
	c.TaskRetryMax = cmp.Or(c.TaskRetryMax, TaskRetryMaxDefault)
	c.StartBatchMax = cmp.Or(c.StartBatchMax, StartBatchMaxDefault)
	c.HistoryPageBytes = cmp.Or(c.HistoryPageBytes, HistoryPageBytesDefault)
	c.BatchInputBytes = cmp.Or(c.BatchInputBytes, BatchInputBytesDefault)
	c.StateCacheEntries = cmp.Or(c.StateCacheEntries, StateCacheEntriesDefault)
	c.StateCacheBytes = cmp.Or(c.StateCacheBytes, StateCacheBytesDefault)
	if c.Clock == nil {
		c.Clock = RealClock
	}
	return c
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	var errs []error
	if c.NodeID == "" {
		errs = append(errs, errors.New("node id is required"))
	}
	if c.ShardID == 0xFFFF {
		errs = append(errs, errors.New("shard id 65535 is reserved"))
	}
	for name, d := range map[string]time.Duration{
		"idempotency window": c.IdempotencyWindow, "poll interval": c.PollInterval, "lease ttl": c.LeaseTTL,
		"sweep interval": c.SweepInterval, "workflow task timeout": c.WorkflowTaskTimeout, "task retry max": c.TaskRetryMax,
	} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("%s must not be negative", name))
		}
	}
	if c.WorkflowWorkers < 0 || c.ActivityWorkers < 0 || c.SweepBatch < 0 || c.WorkflowTaskBatch < 0 {
		errs = append(errs, errors.New("worker counts, workflow task batch and sweep batch must not be negative"))
	}
	if c.HistoryPageBytes < 0 || c.StateCacheBytes < 0 || c.BatchInputBytes < 0 {
		errs = append(errs, errors.New("history page bytes, state cache bytes and batch input bytes must not be negative"))
	}
	if c.StartBatchMax < 0 || c.StartBatchMax > StartBatchMaxLimit {
		errs = append(errs, fmt.Errorf("start batch max %d is outside 0..%d", c.StartBatchMax, StartBatchMaxLimit))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("engine config: %w", err)
	}
	return nil
}

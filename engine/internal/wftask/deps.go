package wftask

import (
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/fence"
	"github.com/harvestd/harvest/engine/internal/loop"
	"github.com/harvestd/harvest/engine/internal/runs"
	"github.com/harvestd/harvest/engine/shardapi"
)

// The workflow task's crash points, in the order a task meets them (the
// engine's crashpoint.go lists every point).
const (
	// CrashLoaded: the task's history is loaded, its code not run yet.
	CrashLoaded loop.CrashPoint = "workflow_task.loaded"
	// CrashRan: the code ran, its commands are queued, nothing is sent.
	CrashRan loop.CrashPoint = "workflow_task.ran"
	// CrashBeforeCommit: the writes are about to go out with the COMMIT.
	CrashBeforeCommit loop.CrashPoint = "workflow_task.before_commit"
	// CrashCommitted: the commit succeeded, its effects not settled.
	CrashCommitted loop.CrashPoint = "workflow_task.committed"
	// CrashChildClose: a task closes a child run (its report to the
	// parent is queued with the close), nothing is sent yet.
	CrashChildClose loop.CrashPoint = "child_close.before_commit"
)

// Deps is what the workflow-task runner uses; the engine fills it.
type Deps struct {
	Reg *harvest.Registry
	// Pool serves the reads outside a transaction (a query's history).
	Pool  *pgxpool.Pool
	Fence *fence.Fence
	// Settle acts on a committed batch's effects.
	Settle runs.Settle
	// Route adds the rows of commands that act on other runs (the
	// outbox's).
	Route runs.Router
	// Reserve takes free activity slots for up to n of a batch's new
	// activity tasks (direct dispatch; nil when none is free).
	Reserve func(n int) *runs.Direct
	// Owning reports whether the engine holds the lease: only then do
	// runs go back to the state cache.
	Owning func() bool
	Crash  loop.Crash
	Log    zerolog.Logger
	// Wake wakes the workflow loop; Poll is its poll tick.
	Wake chan struct{}
	Poll time.Duration
	// Batch is the most tasks one transaction runs; TaskTimeout bounds a
	// task's workflow code; RetryMax bounds a failed task's backoff.
	Batch       int
	TaskTimeout time.Duration
	RetryMax    time.Duration
	// CacheEntries and CacheBytes bound the state cache.
	CacheEntries int
	CacheBytes   int64
}

// Runner runs workflow tasks.
type Runner struct {
	d    Deps
	live *stateCache
}

// New makes a Runner with an empty state cache.
func New(d Deps) *Runner {
	return &Runner{d: d, live: newStateCache(d.CacheEntries, d.CacheBytes)}
}

// CacheStats reports the state cache's contents and counters.
func (r *Runner) CacheStats() shardapi.StateCacheStats {
	n, b := r.live.len()
	return shardapi.StateCacheStats{Entries: n, Bytes: b, Hits: r.live.hits.Load(), Misses: r.live.misses.Load(),
		Rebuilds: r.live.stale.Load(), QueryHits: r.live.queryHits.Load()}
}

// Purge stops and drops every cached run: the lease changed hands.
func (r *Runner) Purge() { r.live.purge() }

// Drop stops and drops the cached runs of ids (they closed).
func (r *Runner) Drop(ids ...uuid.UUID) { r.live.drop(ids...) }

// CachedNext is the next event id the cached run of id is at; false when
// the cache holds none (tests).
func (r *Runner) CachedNext(id uuid.UUID) (int64, bool) { return r.live.nextOf(id) }

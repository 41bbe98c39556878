package wftask

import (
	"container/list"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"

	"github.com/harvestd/harvest"
)

// Cached workflow state (sticky execution).
//
// A workflow task used to read its run's whole history and replay it, so a
// run's n-th task cost O(n). The shard owner keeps the live state of
// recently active runs instead (harvest.Run: coroutines parked where they
// blocked) and a task reads and applies only the events after the cached
// position. The cache is an LRU bounded by entries and by the bytes of
// event data its runs applied (Config.StateCacheEntries, StateCacheBytes).
//
// Invariant: a cached run is exactly what replaying the committed history
// up to its next event id gives. So a run is in the cache only between
// tasks: a task takes it out (take) and it goes back only once the task's
// transaction committed (SettleLive); a task that failed, ran into a
// failed transaction, or closed its run leaves it out and stops it. Every
// close drops it (runs.Watch), and so does any change of the lease (Start,
// halt, lostLease purge the cache): another owner may have written since.
// On top of that, a run checks that the events it is given start with the
// commands of its last step (harvest.ErrStaleRun); any failure of a cached
// step falls back to a full replay, whose result counts. A miss, a
// restart or an owner change replays in full: the same result, and the
// replay checks (names, argument digests) run whenever state is rebuilt.

// liveRun is one cached run.
type liveRun struct {
	id  uuid.UUID
	run *harvest.Run
	// pos is the event id of the first command of the run's last step:
	// the next task gives the run the events from there on.
	pos int64
	// next is the run's next_event_id after its last step committed.
	next int64
	// keep: the task holding the run ran it to a step worth caching.
	keep bool
}

// stateCache is the LRU of live runs. The zero bounds of a disabled cache
// keep nothing.
type stateCache struct {
	mu         sync.Mutex
	maxEntries int
	maxBytes   int64
	bytes      int64
	order      *list.List // of *liveRun, most recently used first
	byID       map[uuid.UUID]*list.Element

	// hits, misses and stale count the lookups of workflow tasks,
	// queryHits the queries answered from a cached run.
	hits, misses, stale, queryHits atomic.Int64
}

func newStateCache(maxEntries int, maxBytes int64) *stateCache {
	return &stateCache{maxEntries: max(maxEntries, 0), maxBytes: maxBytes, order: list.New(),
		byID: map[uuid.UUID]*list.Element{}}
}

// take removes the run of id from the cache and returns it, nil if it
// has none.
func (c *stateCache) take(id uuid.UUID) *liveRun {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byID[id]
	if !ok {
		return nil
	}
	return c.remove(el)
}

// put caches lr, unless it holds a newer run of the same execution; what
// it replaces or evicts to stay within its bounds is stopped.
func (c *stateCache) put(lr *liveRun) {
	c.mu.Lock()
	var out []*liveRun
	if el, ok := c.byID[lr.id]; ok {
		if el.Value.(*liveRun).next > lr.next {
			c.mu.Unlock()
			lr.run.Stop()
			return
		}
		out = append(out, c.remove(el))
	}
	c.byID[lr.id] = c.order.PushFront(lr)
	c.bytes += lr.run.Size()
	for c.order.Len() > c.maxEntries || (c.bytes > c.maxBytes && c.order.Len() > 0) {
		out = append(out, c.remove(c.order.Back()))
	}
	c.mu.Unlock()
	stopAll(out)
}

// drop stops and removes the runs of ids.
func (c *stateCache) drop(ids ...uuid.UUID) {
	c.mu.Lock()
	var out []*liveRun
	for _, id := range ids {
		if el, ok := c.byID[id]; ok {
			out = append(out, c.remove(el))
		}
	}
	c.mu.Unlock()
	stopAll(out)
}

// purge stops and removes every run.
func (c *stateCache) purge() {
	c.mu.Lock()
	out := make([]*liveRun, 0, c.order.Len())
	for c.order.Len() > 0 {
		out = append(out, c.remove(c.order.Back()))
	}
	c.mu.Unlock()
	stopAll(out)
}

// len is the number of cached runs and the bytes they applied.
func (c *stateCache) len() (int, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len(), c.bytes
}

// remove unlinks el; the caller holds c.mu and stops the run.
func (c *stateCache) remove(el *list.Element) *liveRun {
	lr := c.order.Remove(el).(*liveRun)
	delete(c.byID, lr.id)
	c.bytes -= lr.run.Size()
	return lr
}

func stopAll(runs []*liveRun) {
	for _, lr := range runs {
		lr.run.Stop()
	}
}

// nextOf is the next event id the cached run of id is at; false when the
// cache holds none.
func (c *stateCache) nextOf(id uuid.UUID) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byID[id]
	if !ok {
		return 0, false
	}
	return el.Value.(*liveRun).next, true
}

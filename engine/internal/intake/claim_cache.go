package intake

import (
	"sync"
	"time"

	"github.com/harvestd/harvest/engine/internal/loop"
	"github.com/harvestd/harvest/engine/shardapi"
)

// claimCache remembers live start claims, with the state of the run each
// points to, so that a replay of a key is answered without reading the
// database: the fast path of the read-only fast path.
//
// It is safe because of what can change and what cannot:
//   - A committed claim never changes while it lives: the claim statements
//     only take over an expired claim, the sweeper deletes only expired
//     ones, and a batch deletes only the claims it inserted itself. An
//     entry is used only until a moment no later than its claim expires by
//     the database's clock (see put).
//   - A closed run stays closed, with the same state: a terminal state is
//     answered from the cache.
//   - A RUNNING state is answered only while the run is in the close
//     watch's known-open set, which every close of an owned run leaves
//     (runs.Watch.FireWith) and which is cleared whenever the lease changes
//     hands, and for at most runningFor after it was seen (the engine's
//     poll interval): a close whose commit this engine could not confirm,
//     or made by a successor it has not noticed yet, is seen by then, as a
//     result poll sees it. Otherwise the key is read again, and the read's
//     state cached.
//
// Memory is bounded by two generations of claimGeneration entries.
type claimCache struct {
	mu         sync.Mutex
	size       int
	runningFor time.Duration
	entries    loop.Generations[nameKey, cachedClaim]
	// gen counts forgets: an answer read before one is not cached after.
	gen uint64
}

// cachedClaim is a replay answer and the local time it may be used until.
type cachedClaim struct {
	res   shardapi.StartResult
	until time.Time
}

// usable reports whether the entry may answer at now. Both the monotonic
// and the wall clock must agree: the monotonic clock stands still while
// the machine sleeps, and the database's does not.
func (e cachedClaim) usable(now time.Time) bool {
	return now.Before(e.until) && now.Round(0).Before(e.until.Round(0))
}

// claimGeneration is the size at which the cache starts a new generation,
// dropping the oldest.
const claimGeneration = 1 << 15

// newClaimCache keeps two generations of size entries; a RUNNING state
// answers for at most runningFor.
func newClaimCache(size int, runningFor time.Duration) *claimCache {
	return &claimCache{size: size, runningFor: runningFor, entries: loop.NewGenerations[nameKey, cachedClaim](size)}
}

// generation is the generation to hand put for an answer read from now on.
func (c *claimCache) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// put caches res, the replay answer of key's claim, which was live at
// local time seen (taken before the read or the claim's transaction began)
// with left to live by the database's clock then; gen is generation's
// answer from before seen. The entry stops before the claim expires, less
// a sixty-fourth of left for a database clock that jumps ahead (a bigger
// jump can make the database see the claim expire first). Unknown states
// (a claim whose run is not on this shard) are not cached.
func (c *claimCache) put(gen uint64, key string, res shardapi.StartResult, seen time.Time, left time.Duration) {
	if res.State == "" || left <= 0 {
		return
	}
	res.StartedFresh, res.Deduplicated = false, true
	e := cachedClaim{res: res, until: seen.Add(left - left/64)}
	if !shardapi.IsTerminal(res.State) && e.until.After(seen.Add(c.runningFor)) {
		e.until = seen.Add(c.runningFor)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	c.entries.Add(nameKey{res.WorkflowName, key}, e)
}

// get returns the cached answer of (name, key) if it may still be used at
// now; open reports whether a RUNNING run is still known open.
func (c *claimCache) get(name, key string, now time.Time, open func(shardapi.StartResult) bool) (shardapi.StartResult, bool) {
	c.mu.Lock()
	e, ok := c.entries.Get(nameKey{name, key})
	c.mu.Unlock()
	if !ok || !e.usable(now) {
		return shardapi.StartResult{}, false
	}
	if !shardapi.IsTerminal(e.res.State) && !open(e.res) {
		return shardapi.StartResult{}, false
	}
	return e.res, true
}

// has reports whether (name, key) has an entry, usable or not.
func (c *claimCache) has(name, key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entries.Has(nameKey{name, key})
}

// forget drops every entry: the lease changed hands, and a claim this
// engine saw live may since have expired by another owner's window and
// been taken over.
func (c *claimCache) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries = loop.NewGenerations[nameKey, cachedClaim](c.size)
	c.gen++
}

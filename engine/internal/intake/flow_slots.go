package intake

import (
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
	"github.com/harvestd/harvest/internal/metrics"
)

// Slots taken in the start (the fast path of flow control).
//
// A start of a limited workflow whose key has a free slot and no queued
// run takes the slot in its own transaction: its run is inserted RUNNING
// (its first task run in the batch, as any start's), and only the others
// wait QUEUED for the dispatcher. Every transaction that takes a slot in a
// start or makes a run QUEUED holds its key's flow lock (an advisory lock
// taken before any row it writes, after the placement locks, in hash
// order) and reads the key's RUNNING and QUEUED runs in a statement after
// the lock. The dispatcher takes no lock: a queued run it can see was
// committed under the lock, so any start that took a slot of its key
// before it committed is visible to the dispatcher's count too, and any
// start after it saw it queued and queued behind it. A slot is still only
// the run's RUNNING state; nothing else is taken or given back.
//
// A two-trip batch reads each key's use in its first trip and decides. A
// one-trip batch assumes its starts' keys free (checked by harvest_expect,
// expectFlowFree: a miss runs the batch again in two trips), except the
// keys a two-trip batch found full or queued within flowHintTTL, whose
// starts it queues without a check. A delayed start always waits QUEUED.

const (
	// flowLockClass is the first key of the two-key advisory lock of a
	// limited workflow's key ("HVFL"); the second is hashtext of the
	// workflow name and the key.
	flowLockClass int32 = 0x4856_464c
	// expectFlowFree: every key a one-trip batch takes slots of has them
	// free and nothing queued.
	expectFlowFree = "a free slot"
	// flowHintTTL is how long a key found full is queued to without a
	// check by one-trip batches.
	flowHintTTL = 500 * time.Millisecond
	// maxFlowHints bounds the keys remembered (all are forgotten past it).
	maxFlowHints = 4096
)

// flowHints are the keys two-trip batches found full or queued lately.
type flowHints struct {
	mu   sync.Mutex
	full map[nameKey]time.Time
}

// isFull reports whether k was found full within flowHintTTL.
func (h *flowHints) isFull(k nameKey, now time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	at, ok := h.full[k]
	return ok && now.Sub(at) < flowHintTTL
}

// note records what a batch found of k.
func (h *flowHints) note(k nameKey, full bool, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !full {
		delete(h.full, k)
		return
	}
	if h.full == nil || len(h.full) >= maxFlowHints {
		h.full = make(map[nameKey]time.Time)
	}
	h.full[k] = now
}

// keyUse is a key's use read under its lock, as a batch goes on taking
// its slots.
type keyUse struct {
	running, max int64
	queued       bool
}

// take takes a slot for a start of the key (req), or queues it: a
// delayed start, a key with a queued run or no free slot. Once one start
// of the key queues, the starts after it do.
func (u *keyUse) take(req StartRequest) bool {
	if u == nil || req.flow == nil {
		return false
	}
	if u.queued || req.dueAt != nil || u.running >= u.max {
		u.queued = true
		return false
	}
	u.running++
	return true
}

// full reports whether a start of the key would queue now.
func (u *keyUse) full() bool { return u.queued || u.running >= u.max }

// flowKeyOf is the (workflow name, key) of a limited start.
func flowKeyOf(req StartRequest) nameKey { return nameKey{req.WorkflowName, req.flow.Key} }

// oneKey is the flow key of one limited start, as statement arguments.
func oneKey(req StartRequest) store.FlowKeys {
	var k store.FlowKeys
	k.Add(req.WorkflowName, req.flow.Key, req.flowMax, 0)
	return k
}

// queueSingleFlow queues, for a single start of a limited workflow, its
// key's lock and the read of its use into *use.
func queueSingleFlow(b *pgx.Batch, req StartRequest, use **keyUse) {
	if req.flow == nil {
		return
	}
	store.QueueFlowUse(b, oneKey(req), flowLockClass, func(_ int, running int64, queued bool) {
		*use = &keyUse{running: running, max: req.flowMax, queued: queued}
	})
}

// flowKeys are the distinct keys of the plan's limited starts that may
// create a run, and their starts (by key, in order).
func (p *batchPlan) flowKeys() (store.FlowKeys, map[nameKey][]int) {
	var (
		keys   store.FlowKeys
		starts map[nameKey][]int // made at the first limited start: most batches have none
	)
	for i, r := range p.reqs {
		if p.fate[i] != fateCreate || r.flow == nil {
			continue
		}
		if starts == nil {
			starts = make(map[nameKey][]int)
		}
		k := flowKeyOf(r)
		if _, ok := starts[k]; !ok {
			keys.Add(k.name, k.key, r.flowMax, 0)
		}
		starts[k] = append(starts[k], i)
	}
	return keys, starts
}

// queueFlowReads queues, for a two-trip batch, its keys' locks and the
// read of their use.
func (p *batchPlan) queueFlowReads(b *pgx.Batch) {
	keys, _ := p.flowKeys()
	if len(keys.Names) == 0 {
		return
	}
	p.use = make(map[nameKey]*keyUse, len(keys.Names))
	store.QueueFlowUse(b, keys, flowLockClass, func(i int, running int64, queued bool) {
		p.use[nameKey{keys.Names[i], keys.Keys[i]}] = &keyUse{running: running, max: keys.Max[i], queued: queued}
	})
}

// queueFlowAssumptions queues, for a one-trip batch, its keys' locks and
// the check that the slots it takes are free: each start of a key not
// found full lately takes one, up to the key's limit; the others queue.
// A key found full is only locked: its take is 0, which the check passes
// over, and so is the limit it is read against, so that its running runs
// are not counted (at most one is read, whatever its limit).
func (p *batchPlan) queueFlowAssumptions(b *pgx.Batch, hints *flowHints) {
	keys, starts := p.flowKeys()
	if len(keys.Names) == 0 {
		return
	}
	now := time.Now()
	for j, name := range keys.Names {
		k := nameKey{name, keys.Keys[j]}
		if hints.isFull(k, now) {
			keys.Max[j] = 0
			continue
		}
		keys.Take[j] = p.assumeSlots(starts[k], keys.Max[j])
	}
	store.QueueExpectFlowFree(b, keys, flowLockClass, expectFlowFree)
}

// assumeSlots marks the first starts of one key, up to max and up to its
// first delayed start, as taking slots; it returns how many.
func (p *batchPlan) assumeSlots(starts []int, max int64) int64 {
	var take int64
	for _, i := range starts {
		if take >= max || p.reqs[i].dueAt != nil {
			break
		}
		p.slot[i] = true
		take++
	}
	return take
}

// holds decides whether start i, about to be created, takes a slot: as a
// one-trip batch assumed, or from its key's use read by a two-trip one.
func (p *batchPlan) holds(i int, r StartRequest) bool {
	if r.flow == nil {
		return false
	}
	if p.oneTrip {
		return p.slot[i]
	}
	return p.use[flowKeyOf(r)].take(r)
}

// noteFlow remembers what a committed two-trip batch found of its keys.
func (p *batchPlan) noteFlow(h *flowHints) {
	now := time.Now()
	for k, u := range p.use {
		h.note(k, u.full(), now)
	}
}

// countFlow counts, in the metrics, what a committed start of a limited
// workflow did: took a slot, or queued its run.
func countFlow(req StartRequest, state string) {
	switch {
	case req.flow == nil:
	case state == shardapi.StateQueued:
		metrics.FlowQueued.WithLabelValues(req.WorkflowName).Inc()
	default:
		metrics.FlowSlots.WithLabelValues(req.WorkflowName, "start").Inc()
	}
}

// countFlow counts what the committed batch's limited starts did.
func (p *batchPlan) countFlow() {
	for i, r := range p.reqs {
		if p.fate[i] == fateCreate {
			countFlow(r, p.res[i].State)
		}
	}
}

// stateOf is the state a start creates its run in: QUEUED for a limited
// workflow's run that takes no slot.
func (req StartRequest) stateOf(held bool) string {
	if req.flow != nil && !held {
		return shardapi.StateQueued
	}
	return shardapi.StateRunning
}

// mayTakeSlot reports whether a start may take a slot in a one-trip
// batch (its first task may then run early).
func (in *Intake) mayTakeSlot(req *StartRequest) bool {
	return req.flow == nil || (req.dueAt == nil && !in.hints.isFull(flowKeyOf(*req), time.Now()))
}

// queueFlowLock queues, for a signal-with-start of a limited workflow
// whose key its input gives, the key's lock: the run it may create waits
// QUEUED, and queued runs are made under their keys' locks. A start its
// checks will refuse needs none.
func (in *Intake) queueFlowLock(b *pgx.Batch, sr StartRequest) {
	lim := in.limit(sr.WorkflowName)
	if !lim.Limited() {
		return
	}
	key, err := flowKey(lim, &sr)
	if err != nil {
		return
	}
	var k store.FlowKeys
	k.Add(sr.WorkflowName, key, int64(lim.MaxRunning), 0)
	store.QueueFlowLocks(b, k, flowLockClass)
}

package runs

import (
	"sync"

	"github.com/google/uuid"

	"github.com/harvestd/harvest/engine/internal/loop"
	"github.com/harvestd/harvest/engine/shardapi"
)

// Watch wakes waiters when runs close: the waiters of one run (Result
// long-polls). A close wakes only its own run's waiters, so N polls of N
// runs cost N reads, not N per close; a closer that knows the run's
// outcome (the batches' UPDATE returns it) hands it to the waiters, who
// then need no read at all.
//
// It also remembers the runs this engine created open and has not seen
// close (open), so that a result poll of such a run can wait without
// reading it first: every close of an owned run fires here. The memory is
// bounded (two generations of openGeneration runs; a forgotten run is
// read as before) and cleared whenever the lease is taken or let go.
type Watch struct {
	mu   sync.Mutex
	runs map[uuid.UUID]*runWaiters
	// open are the runs known open.
	open loop.Generations[uuid.UUID, struct{}]
	// OnClose, when set, is told of every close fired (the state cache
	// drops the runs).
	OnClose func(ids ...uuid.UUID)
}

// openGeneration is the size at which the open runs start a new
// generation, dropping the oldest.
const openGeneration = 1 << 15

type runWaiters struct {
	ch  chan struct{}
	n   int
	out *shardapi.Outcome // set before ch closes, when the closer handed it over
}

// NewWatch returns a watch with no waiters and no run known open.
func NewWatch() *Watch {
	return &Watch{runs: map[uuid.UUID]*runWaiters{}, open: loop.NewGenerations[uuid.UUID, struct{}](openGeneration)}
}

// Opened records runs created open by a transaction about to commit.
// Call it before the COMMIT: once the runs are committed, any other
// transaction may close them, and its close must find them here.
func (w *Watch) Opened(ids ...uuid.UUID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range ids {
		w.open.Add(id, struct{}{})
	}
}

// Unopened drops runs opened recorded for a transaction that then failed
// (or whose COMMIT's answer was lost): a poll of them reads them first.
func (w *Watch) Unopened(ids ...uuid.UUID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range ids {
		w.open.Remove(id)
	}
}

// Forget drops every run known open: the lease changed hands, and closes
// may now commit elsewhere.
func (w *Watch) Forget() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.open = loop.NewGenerations[uuid.UUID, struct{}](openGeneration)
}

// IsOpen reports whether the run is known open.
func (w *Watch) IsOpen(id uuid.UUID) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.open.Has(id)
}

// Wait is one waiter's registration for one execution's close.
type Wait struct {
	w  *Watch
	id uuid.UUID
	r  *runWaiters
	// KnownOpen: the run was open when the waiter registered, and its
	// close will fire this waiter.
	KnownOpen bool
}

// WaitFor registers a waiter for execution id's close; the waiter must
// call Release when it stops waiting.
func (w *Watch) WaitFor(id uuid.UUID) *Wait {
	w.mu.Lock()
	defer w.mu.Unlock()
	r, ok := w.runs[id]
	if !ok {
		r = &runWaiters{ch: make(chan struct{})}
		w.runs[id] = r
	}
	r.n++
	return &Wait{w: w, id: id, r: r, KnownOpen: w.open.Has(id)}
}

// Closed is closed when the execution closes.
func (c *Wait) Closed() <-chan struct{} { return c.r.ch }

// Outcome is the outcome the closer handed over; only after closed.
func (c *Wait) Outcome() (shardapi.Outcome, bool) {
	if c.r.out == nil {
		return shardapi.Outcome{}, false
	}
	return *c.r.out, true
}

// Release ends the waiter's registration.
func (c *Wait) Release() {
	c.w.mu.Lock()
	defer c.w.mu.Unlock()
	if c.r.n--; c.r.n == 0 && c.w.runs[c.id] == c.r {
		delete(c.w.runs, c.id)
	}
}

// Fire wakes the waiters of the closed ids.
func (w *Watch) Fire(ids ...uuid.UUID) { w.FireWith(nil, ids...) }

// FireWith is Fire with the outcomes of (some of) the closed ids, handed
// to their waiters. Call it only after the closes committed.
func (w *Watch) FireWith(outs map[uuid.UUID]shardapi.Outcome, ids ...uuid.UUID) {
	if w.OnClose != nil {
		w.OnClose(ids...)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range ids {
		w.open.Remove(id)
		if r, ok := w.runs[id]; ok {
			if o, ok := outs[id]; ok {
				r.out = &o
			}
			close(r.ch)
			delete(w.runs, id)
		}
	}
}

// Waiters is how many waiters run id has (tests).
func (w *Watch) Waiters(id uuid.UUID) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if r, ok := w.runs[id]; ok {
		return r.n
	}
	return 0
}

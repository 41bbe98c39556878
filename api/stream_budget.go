package api

import (
	"context"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/harvestd/harvest/internal/metrics"
)

// The stream memory budget: the history a node's event streams hold at
// once (pages read from a shard and being encoded and written, frames
// relayed from an owner) is bounded by Limits.StreamMemory, whatever the
// number of streams. A stream takes its page's share of the budget
// before it reads the page and gives it back once the page is written;
// when the budget is spent, streams wait their turn (FIFO) rather than
// allocate past it.
const (
	// streamPageBytesMax bounds the event data of one page a stream
	// reads: the engine's HistoryPageBytes default, so that a stream of
	// large events reads several at a time (a page of one event each
	// costs a query and a flush per event: 1 MiB pages made streams of
	// 1 MiB events a third slower). A page is at most a sixteenth of
	// the budget (streamPageBytes), so that eight streams read at once.
	streamPageBytesMax = 4 << 20
	// streamPageShare: a page is at most budget/streamPageShare.
	streamPageShare = 16
	// streamWriteTimeout bounds writing one page to the client: a client
	// that does not take it in time loses its stream (and may resume with
	// Last-Event-ID), so a slow reader does not keep its share of the
	// budget from the other streams.
	streamWriteTimeout = 30 * time.Second
)

// streamPageBytes is the page bound of a node whose stream memory budget
// is budget.
func streamPageBytes(budget int64) int64 {
	return min(streamPageBytesMax, budget/streamPageShare)
}

// pageCharge is what a page of data bound pageBytes takes of the budget:
// the page as read plus one event at a time encoded.
func pageCharge(pageBytes int64) int64 { return 2 * pageBytes }

// streamBudget is a node's stream memory budget.
type streamBudget struct {
	sem  *semaphore.Weighted
	size int64
}

func newStreamBudget(size int64) *streamBudget {
	return &streamBudget{sem: semaphore.NewWeighted(size), size: size}
}

// acquire takes n bytes of the budget (at most all of it), waiting for
// them unless ctx ends first; it returns what it took.
func (b *streamBudget) acquire(ctx context.Context, n int64) (int64, error) {
	n = min(max(n, 1), b.size)
	if !b.sem.TryAcquire(n) {
		metrics.StreamMemoryWaits.Inc()
		if err := b.sem.Acquire(ctx, n); err != nil {
			return 0, err
		}
	}
	metrics.StreamMemoryBytes.Add(float64(n))
	return n, nil
}

// release gives back n bytes acquire took.
func (b *streamBudget) release(n int64) {
	if n <= 0 {
		return
	}
	metrics.StreamMemoryBytes.Sub(float64(n))
	b.sem.Release(n)
}

// grow makes held, taken by acquire, at least need (at most the whole
// budget): it gives held back and waits for need, so that two streams
// never hold part each while waiting for the rest.
func (b *streamBudget) grow(ctx context.Context, held, need int64) (int64, error) {
	if need <= held || held >= b.size {
		return held, nil
	}
	if b.sem.TryAcquire(min(need, b.size) - held) {
		metrics.StreamMemoryBytes.Add(float64(min(need, b.size) - held))
		return min(need, b.size), nil
	}
	b.release(held)
	return b.acquire(ctx, need)
}

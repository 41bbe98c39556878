package loop

import (
	"container/heap"
	"sync"
	"time"
)

// Wakeup calls fire at each time it was armed for, with one timer set to
// the earliest: the activity loop's wakeup for retries coming due between
// its polls. It keeps at most WakeupMax times (the latest are dropped: the
// poll tick is the backstop).
type Wakeup struct {
	mu    sync.Mutex
	times timeHeap
	timer *time.Timer
	fire  func()
}

// WakeupMax bounds the times a Wakeup keeps.
const WakeupMax = 4096

// NewWakeup makes a Wakeup that calls fire.
func NewWakeup(fire func()) *Wakeup { return &Wakeup{fire: fire} }

// After arms the wakeup for d from now.
func (w *Wakeup) After(d time.Duration) {
	at := time.Now().Add(d)
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.times) >= WakeupMax {
		return
	}
	heap.Push(&w.times, at)
	if w.times[0].Equal(at) {
		w.reset(d)
	}
}

// reset sets the timer to d from now; the caller holds mu.
func (w *Wakeup) reset(d time.Duration) {
	if w.timer == nil {
		w.timer = time.AfterFunc(d, w.ring)
		return
	}
	w.timer.Reset(d)
}

// ring fires for the times that have come, then sets the timer to the
// next one.
func (w *Wakeup) ring() {
	now := time.Now()
	w.mu.Lock()
	due := false
	for len(w.times) > 0 && !w.times[0].After(now) {
		heap.Pop(&w.times)
		due = true
	}
	if len(w.times) > 0 {
		w.reset(w.times[0].Sub(now))
	}
	w.mu.Unlock()
	if due {
		w.fire()
	}
}

// Stop drops every time armed.
func (w *Wakeup) Stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.times = w.times[:0]
	if w.timer != nil {
		w.timer.Stop()
	}
}

// timeHeap is a min-heap of times (container/heap).
type timeHeap []time.Time

func (h timeHeap) Len() int           { return len(h) }
func (h timeHeap) Less(i, j int) bool { return h[i].Before(h[j]) }
func (h timeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *timeHeap) Push(x any)        { *h = append(*h, x.(time.Time)) }
func (h *timeHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	*h = old[:len(old)-1]
	return t
}

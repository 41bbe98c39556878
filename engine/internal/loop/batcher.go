package loop

import (
	"context"
	"errors"
	"sync"
)

// ErrBatcherStopped: the batcher's engine run ended before it took the
// request; the caller takes its single path, which reports the stop.
var ErrBatcherStopped = errors.New("batcher stopped")

// Batcher is the group-commit mechanism shared by starts, signals and
// activity completions: concurrent callers hand their requests to one
// goroutine that takes whatever is queued (up to max, never waiting for
// more), handles the group in one transaction and answers each request;
// while one group commits, the next queues up.
type Batcher[T any] struct {
	in   chan T        // unbuffered: a received request is taken
	done chan struct{} // closed when run has returned
	max  int
}

// NewBatcher makes a batcher of groups of at most max requests.
func NewBatcher[T any](max int) *Batcher[T] {
	return &Batcher[T]{in: make(chan T), done: make(chan struct{}), max: max}
}

// Submit hands x to the batcher. It fails with ctx's error when ctx ends
// first, or ErrBatcherStopped when the batcher has exited; once it returns
// nil, handle owns x and answers it.
func (g *Batcher[T]) Submit(ctx context.Context, x T) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case g.in <- x:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-g.done:
		return ErrBatcherStopped
	}
}

// Run takes what is queued, calls handle with it, and repeats until ctx
// ends. handle must answer every request of its group. With n > 1, n
// loops take groups side by side (each with its own handle call), so that
// a group need not wait for the one in flight.
func (g *Batcher[T]) Run(ctx context.Context, n int, handle func([]T)) {
	defer close(g.done)
	var wg sync.WaitGroup
	for range max(n, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g.loop(ctx, handle)
		}()
	}
	wg.Wait()
}

func (g *Batcher[T]) loop(ctx context.Context, handle func([]T)) {
	group := make([]T, 0, g.max)
	for {
		select {
		case <-ctx.Done():
			return
		case x := <-g.in:
			group = append(group[:0], x)
		}
	fill:
		for len(group) < g.max {
			select {
			case x := <-g.in:
				group = append(group, x)
			default:
				break fill
			}
		}
		handle(group)
		clear(group)
	}
}

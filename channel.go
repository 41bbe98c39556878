package harvest

// Channel passes values between the coroutines of one workflow run, like
// Temporal's workflow.Channel: a Go channel whose blocking operations
// yield to the workflow scheduler instead of blocking a goroutine, so the
// run stays deterministic. Values live only in memory; replay re-creates
// them by re-running the code. Create it with NewChannel or
// NewBufferedChannel; use it from the run's coroutines only.
type Channel[T any] struct {
	st       *runState
	size     int
	q        []chanItem[T] // sent, not received: buffered values, then blocked senders
	sent     int64
	recv     int64
	closed   bool
	closeSeq int64
}

type chanItem[T any] struct {
	v   T
	seq int64
}

// NewChannel returns an unbuffered channel: Send blocks until a receiver
// takes the value.
func NewChannel[T any](ctx Context) *Channel[T] { return NewBufferedChannel[T](ctx, 0) }

// NewBufferedChannel returns a channel that holds up to size values
// before Send blocks.
func NewBufferedChannel[T any](ctx Context, size int) *Channel[T] {
	return &Channel[T]{st: ctx.state(), size: max(size, 0)}
}

// Send sends v, blocking while the buffer is full (unbuffered: until a
// receiver takes v). Send on a closed channel panics; values sent before
// Close are still received.
func (c *Channel[T]) Send(ctx Context, v T) {
	if c.closed {
		panic("harvest: send on closed channel")
	}
	n := c.sent
	c.sent++
	c.q = append(c.q, chanItem[T]{v: v, seq: c.st.tick()})
	ctx.state().await(func() bool { return n < c.recv+int64(c.size) })
}

// Receive blocks until a value is ready and returns it; ok is false when
// the channel is closed and drained.
func (c *Channel[T]) Receive(ctx Context) (v T, ok bool) {
	ctx.state().await(func() bool { return len(c.q) > 0 || c.closed })
	return c.take()
}

// ReceiveAsync returns a ready value without blocking; ok is false when
// there is none.
func (c *Channel[T]) ReceiveAsync() (v T, ok bool) { return c.take() }

// Close closes the channel: receivers drain it, then get ok false.
func (c *Channel[T]) Close() {
	if !c.closed {
		c.closed, c.closeSeq = true, c.st.tick()
	}
}

// Len is the number of values sent and not yet received.
func (c *Channel[T]) Len() int { return len(c.q) }

func (c *Channel[T]) take() (v T, ok bool) {
	if len(c.q) == 0 {
		return v, false
	}
	v = c.q[0].v
	c.q[0] = chanItem[T]{}
	c.q = c.q[1:]
	c.recv++
	return v, true
}

func (c *Channel[T]) readySeq(*runState) (int64, bool) {
	switch {
	case len(c.q) > 0:
		return c.q[0].seq, true
	case c.closed:
		return c.closeSeq, true
	}
	return 0, false
}

package harvest

// Selector waits on several futures, signals and channels at once and runs
// the handler of the first one ready, like Temporal's workflow.Selector:
//
//	sel := harvest.NewSelector(ctx)
//	sel.AddReceive(Approved, func() { v, _ := Approved.Receive(ctx); ... })
//	sel.AddFuture(harvest.NewTimer(ctx, 24*time.Hour), func() { ... })
//	sel.AddFuture(charge, func() { receipt, err := charge.Get(ctx); ... })
//	sel.Select(ctx)
//
// "First" is history order: every future resolution, signal arrival and
// channel send is numbered as it is delivered, and when several cases are
// ready at once, because their events were delivered before the workflow
// ran, the case whose event came first wins. Replay delivers the same
// events in the same order, so it picks the same case.
//
// A future case fires once: a later Select skips it. A receive case fires
// each time a value is ready; its handler must take exactly one value
// (Receive returns at once inside it), or the value stays for the next
// Select. The cases that did not fire stay pending for later Selects.
// A Selector belongs to the coroutine that uses it.
type Selector struct {
	cases []*selectCase
	deflt func()
}

// Awaitable is what AddFuture waits on: any Future[T].
type Awaitable interface {
	awaitable() *future
}

// Receivable is what AddReceive waits on: a Signal[T] or a *Channel[T].
type Receivable interface {
	// readySeq is the delivery sequence number of the value a receive
	// would take now; ok is false when a receive would block.
	readySeq(s *runState) (seq int64, ok bool)
}

var (
	_ Awaitable  = Future[int]{}
	_ Receivable = Signal[int]{}
	_ Receivable = (*Channel[int])(nil)
)

type selectCase struct {
	ready func(s *runState) (int64, bool)
	fn    func()
	once  bool // a future case: fires at most once
	fired bool
}

// NewSelector returns an empty selector.
func NewSelector(ctx Context) *Selector {
	_ = ctx.state() // workflow code only
	return &Selector{}
}

// AddFuture adds a case that is ready when f is resolved; fn typically
// calls f.Get, which then returns at once.
func (sl *Selector) AddFuture(f Awaitable, fn func()) *Selector {
	fu := f.awaitable()
	sl.cases = append(sl.cases, &selectCase{once: true, fn: fn,
		ready: func(*runState) (int64, bool) { return fu.seq, fu.ready }})
	return sl
}

// AddReceive adds a case that is ready when r has a value (or, for a
// channel, is closed); fn must receive it from r.
func (sl *Selector) AddReceive(r Receivable, fn func()) *Selector {
	sl.cases = append(sl.cases, &selectCase{fn: fn, ready: r.readySeq})
	return sl
}

// AddDefault makes Select run fn instead of blocking when no case is ready.
func (sl *Selector) AddDefault(fn func()) *Selector {
	sl.deflt = fn
	return sl
}

// Select blocks until a case is ready and runs its handler: the earliest
// ready case in history order (see Selector). With no case that can
// become ready and no default it blocks for good.
func (sl *Selector) Select(ctx Context) {
	s := ctx.state()
	c := sl.earliest(s)
	if c == nil && sl.deflt != nil {
		sl.deflt()
		return
	}
	s.await(func() bool { c = sl.earliest(s); return c != nil })
	c.fired = c.once
	c.fn()
}

// HasPending reports whether Select would run a case without blocking.
func (sl *Selector) HasPending(ctx Context) bool {
	return sl.earliest(ctx.state()) != nil
}

// earliest is the ready case whose value was delivered first, or nil.
func (sl *Selector) earliest(s *runState) *selectCase {
	var best *selectCase
	var bestSeq int64
	for _, c := range sl.cases {
		if c.fired {
			continue
		}
		if seq, ok := c.ready(s); ok && (best == nil || seq < bestSeq) {
			best, bestSeq = c, seq
		}
	}
	return best
}

func (f Future[T]) awaitable() *future { return f.f }

func (s Signal[T]) readySeq(st *runState) (int64, bool) {
	if q := st.signals[s.name]; len(q) > 0 {
		return q[0].seq, true
	}
	return 0, false
}

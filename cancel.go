package harvest

import "fmt"

// Cooperative cancellation.
//
// A cancel request (POST /workflows/{id}/cancel) does not close a run: it
// is recorded as WorkflowCancelRequested and delivered to the code in
// history order, like a signal. From then on the root context is done:
// ctx.Done() is ready, ctx.Err() is a *CanceledError, and every pending or
// new activity, timer and signal receive of the root context fails with a
// *CanceledError. The code may clean up on a context from
// NewDisconnectedContext, whose activities and timers are never
// cancelled, and then return: an error that is ErrCanceled closes the run
// CANCELLED; a value or another error closes it COMPLETED or FAILED as
// usual. Code that never looks at cancellation returns the CanceledError
// of its next wait, so the run ends CANCELLED on its next block.

// CanceledError is what waits on a cancelled context return.
type CanceledError struct {
	// Reason is the reason sent with the cancel request.
	Reason string
}

func (e *CanceledError) Error() string {
	if e.Reason == "" {
		return "workflow canceled"
	}
	return fmt.Sprintf("workflow canceled: %s", e.Reason)
}

// Is makes errors.Is(err, ErrCanceled) true.
func (e *CanceledError) Is(target error) bool { return target == ErrCanceled }

// cancelState is a run's cancellation: whether it was requested, and the
// futures of the root context a request fails.
type cancelState struct {
	requested bool
	reason    string
	done      future
	watched   []*future
	children  []*cancelScope // the WithCancel scopes made from the root
}

// request fails every watched future that is still pending.
func (c *cancelState) request(reason string) {
	if c.requested {
		return
	}
	c.requested, c.reason = true, reason
	c.done.resolve(nil, nil)
	for _, f := range c.watched {
		f.resolve(nil, &CanceledError{Reason: reason})
	}
	c.watched = nil
}

// requestCancel is a cancel request delivered by the driver: it cancels the root's scopes too,
// without recording cancel commands (see scope.go).
func (s *runState) requestCancel(reason string) {
	if s.cancel.requested {
		return
	}
	s.cancel.request(reason)
	for _, sc := range s.cancel.children {
		sc.cancel(s, reason, false)
	}
}

// NewDisconnectedContext returns a context of the same run that a cancel
// request does not reach: its Done is never ready, its Err is nil, and its
// activities, timers and signal receives are not cancelled. Use it to
// clean up after the root context was cancelled.
func NewDisconnectedContext(ctx Context) Context {
	return wfContext{s: ctx.state(), detached: true}
}

// Done is ready once a cancel request reached the run (never, for a
// disconnected context).
func (c wfContext) Done() Future[struct{}] {
	if c.sc != nil {
		return Future[struct{}]{f: &c.sc.done}
	}
	if c.detached {
		return Future[struct{}]{f: &future{}}
	}
	return Future[struct{}]{f: &c.s.cancel.done}
}

// Err is a *CanceledError once a cancel request reached the run (always
// nil for a disconnected context).
func (c wfContext) Err() error {
	if c.sc != nil {
		if c.sc.canceled {
			return c.sc.err
		}
		return nil
	}
	if c.detached || !c.s.cancel.requested {
		return nil
	}
	return &CanceledError{Reason: c.s.cancel.reason}
}

func (c wfContext) isDetached() bool { return c.detached }

// startIn starts a wait of ctx: it fails at once when ctx is cancelled,
// and fails later if ctx is cancelled while it is pending; cancelling its
// WithCancel scope issues the command kind (scope.go).
func startIn(ctx Context, kind EventType, start func() *future) *future {
	if err := ctx.Err(); err != nil {
		return resolvedFuture(nil, err)
	}
	f := start()
	if !f.ready {
		watch(ctx, f, kind)
	}
	return f
}

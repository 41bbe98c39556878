package harvest

import "strconv"

// Cancel scopes.
//
// WithCancel makes a child context with a cancel function of its own, like
// Temporal's workflow.WithCancel. Calling it cancels the scope and every
// scope made from it: their Done futures are ready, their Err is a
// *CanceledError, and each of their timers and activities still pending is
// cancelled. A cancelled timer is recorded as a TimerCanceled command (the
// engine deletes its row, so it never fires); a cancelled activity as an
// ActivityCancelRequested command (the engine marks its task: an attempt
// not started yet never starts, a running one learns of it through its
// heartbeat). The future of either fails at once with a *CanceledError,
// without waiting for the activity (Temporal's TryCancel); a late result
// is ignored, because a future keeps its first result.
//
// A scope made from the root context is cancelled as well when a cancel
// request reaches the run; one made from a disconnected context only by
// its own cancel function. Commands are issued only by a cancel function,
// which runs in workflow code: a cancel request fails the futures of the
// scopes it reaches but records no cancel commands (their rows are
// cleared when the run closes).

// CancelFunc cancels the context WithCancel returned. Calling it more than
// once, or after the scope was cancelled from its parent, does nothing.
type CancelFunc func()

// scopeCanceledReason is the Reason of the errors a cancel function gives.
const scopeCanceledReason = "context canceled"

// cancelScope is one WithCancel context's cancellation.
type cancelScope struct {
	canceled bool
	err      *CanceledError
	done     future
	children []*cancelScope
	pending  []scopeWait
}

// scopeWait is a pending timer or activity of a scope and the command
// that cancels it ("" for none).
type scopeWait struct {
	f    *future
	kind EventType
	id   string
}

// WithCancel returns a child of ctx that is cancelled when cancel is
// called or when ctx is cancelled, whichever comes first.
func WithCancel(ctx Context) (Context, CancelFunc) {
	s := ctx.state()
	sc := &cancelScope{}
	switch parent := ctx.scope(); {
	case parent != nil:
		parent.children = append(parent.children, sc)
		if parent.canceled {
			sc.cancel(s, parent.err.Reason, false)
		}
	case !ctx.isDetached():
		s.cancel.children = append(s.cancel.children, sc)
		if s.cancel.requested {
			sc.cancel(s, s.cancel.reason, false)
		}
	}
	child := wfContext{s: s, detached: ctx.isDetached(), sc: sc}
	return child, func() { sc.cancel(s, scopeCanceledReason, true) }
}

// cancel cancels the scope and its children. With record set (a cancel
// function, in workflow code) it issues the cancel command of each
// pending timer and activity.
func (sc *cancelScope) cancel(s *runState, reason string, record bool) {
	if sc.canceled {
		return
	}
	sc.canceled, sc.err = true, &CanceledError{Reason: reason}
	sc.done.resolve(nil, nil)
	sc.done.seq = s.tick()
	for _, w := range sc.pending {
		if w.f.ready {
			continue
		}
		w.f.resolve(nil, &CanceledError{Reason: reason})
		w.f.seq = s.tick()
		if record && w.kind != "" {
			s.issueCancel(w.kind, w.id)
		}
	}
	sc.pending = nil
	for _, c := range sc.children {
		c.cancel(s, reason, record)
	}
}

// issueCancel issues the command that cancels timer or activity id.
func (s *runState) issueCancel(kind EventType, id string) {
	s.issue(kind, id, "", args{}, func() any {
		if kind == EventTimerCanceled {
			return TimerCanceledData{TimerID: id}
		}
		return ActivityCancelRequestedData{ActivityID: id}
	})
}

// watch makes a cancel of the context's scope fail f and cancel what
// made it: kind is the cancel command, and the command that made f took
// the last sequence number as its id (runState.nextSeq).
func watch(ctx Context, f *future, kind EventType) {
	s := ctx.state()
	if sc := ctx.scope(); sc != nil {
		sc.pending = append(sc.pending, scopeWait{f: f, kind: kind, id: strconv.Itoa(s.seq)})
		return
	}
	if !ctx.isDetached() {
		s.cancel.watched = append(s.cancel.watched, f)
	}
}

func (c wfContext) scope() *cancelScope { return c.sc }

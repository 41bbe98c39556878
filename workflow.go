package harvest

import (
	"encoding/json"
	"time"

	"github.com/rs/zerolog"
)

// WorkflowInfo describes the run a workflow function executes.
type WorkflowInfo struct {
	ExecutionID  string
	WorkflowName string
	WorkflowID   string
	StartedAt    time.Time
	// ChainID is the first run of the run's continue-as-new chain (the
	// run itself when it continues no other), ContinuedFrom the run it
	// continues ("" for a first run).
	ChainID       string
	ContinuedFrom string
	// HistoryLength is the number of history events up to the code's
	// current point: the last event delivered to it and those before.
	// It is the same on every replay. See ShouldContinueAsNew.
	HistoryLength int
}

// Context is what workflow code receives. Only the SDK's replayer
// implements it: workflow code waits and reads time through it.
type Context interface {
	// Info describes the run.
	Info() WorkflowInfo
	// Now is deterministic workflow time: the timestamp of the latest
	// history event delivered to the code.
	Now() time.Time
	// Logger logs only when not replaying old history.
	Logger() *zerolog.Logger
	// IsReplaying reports whether the code is re-running recorded history.
	IsReplaying() bool
	// Done is ready once the run was asked to cancel (see cancel.go); it
	// never is for a disconnected context.
	Done() Future[struct{}]
	// Err is nil until the run was asked to cancel, then a *CanceledError
	// (errors.Is(err, ErrCanceled)); always nil for a disconnected context.
	Err() error

	state() *runState
	isDetached() bool
	scope() *cancelScope // nil: the root scope (or none, when detached)
}

// Future is the eventual result of an activity or timer.
type Future[T any] struct {
	f *future
}

type future struct {
	ready bool
	value json.RawMessage
	err   error
	seq   int64 // delivery sequence number of its resolution (runState.tick)
}

func resolvedFuture(value json.RawMessage, err error) *future {
	return &future{ready: true, value: value, err: err}
}

// resolve settles f; the first result stands (an activity's result that
// arrives after a cancel failed its future is ignored).
func (f *future) resolve(value json.RawMessage, err error) {
	if f.ready {
		return
	}
	f.ready, f.value, f.err = true, value, err
}

// Get blocks the workflow until the future is resolved and returns its value.
func (f Future[T]) Get(ctx Context) (T, error) {
	st := ctx.state()
	st.await(func() bool { return f.f.ready })
	if f.f.err != nil {
		var zero T
		return zero, f.f.err
	}
	return decodeValue[T](f.f.value)
}

// IsReady reports whether Get would return without blocking.
func (f Future[T]) IsReady() bool { return f.f.ready }

// NewTimer starts a durable timer that fires after d of database time.
func NewTimer(ctx Context, d time.Duration) Future[struct{}] {
	return Future[struct{}]{f: startIn(ctx, EventTimerCanceled, func() *future { return ctx.state().startTimer(d) })}
}

// Sleep blocks the workflow for d; the wait is durable and survives
// restarts of every node.
func Sleep(ctx Context, d time.Duration) error {
	_, err := NewTimer(ctx, d).Get(ctx)
	return err
}

// SideEffect runs fn once, records its result in history and returns the
// recorded value on every replay. Use it for random ids and the like.
func SideEffect[T any](ctx Context, fn func() T) (T, error) {
	st := ctx.state()
	recorded, isNew := st.recordMarker("side_effect")
	if !isNew {
		return decodeValue[T](recorded)
	}
	v := fn()
	raw, err := encodeValue(v)
	if err != nil {
		return v, err
	}
	st.fillMarker(raw)
	return v, nil
}

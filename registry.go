package harvest

import (
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Registrable is a workflow or activity definition that a Registry accepts.
type Registrable interface {
	registration() (registration, error)
}

// registration is one definition ready to be added: a workflow (kind
// "workflow", wf set) or an activity (kind "activity", act set).
type registration struct {
	kind string
	name string
	wf   workflowDef
	act  activityDef
}

// Registry holds the workflows and activities a node can run. It is safe
// for concurrent use; register everything before starting an engine.
type Registry struct {
	mu         sync.RWMutex
	workflows  map[string]workflowDef
	activities map[string]activityDef
	// limited: some workflow declares a concurrency limit (HasLimits);
	// actLimited: some activity does (HasActivityLimits).
	limited, actLimited atomic.Bool
}

type workflowDef struct {
	name   string
	run    func(ctx Context, input json.RawMessage) (json.RawMessage, error)
	schema *jsonschema.Schema // nil: any input
	// signals are the declared signals by name; nil: any signal.
	signals     map[string]SignalDecl
	timeouts    WorkflowTimeouts
	concurrency ConcurrencyLimit
}

type activityDef struct {
	name        string
	opts        ActivityOptions
	run         func(ctx *ActivityContext, input json.RawMessage) (json.RawMessage, error)
	concurrency ConcurrencyLimit
	rate        RateLimit
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{workflows: map[string]workflowDef{}, activities: map[string]activityDef{}}
}

// Register adds definitions, all or none: a name used twice (per kind),
// here or by an earlier Register, or an empty name is an error, and then
// nothing is added.
func (r *Registry) Register(defs ...Registrable) error {
	regs := make([]registration, 0, len(defs))
	for _, d := range defs {
		g, err := d.registration()
		if err != nil {
			return err
		}
		regs = append(regs, g)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.checkNames(regs); err != nil {
		return err
	}
	for _, g := range regs {
		r.add(g)
	}
	return nil
}

// MustRegister is Register that panics on error, for package init code.
func (r *Registry) MustRegister(defs ...Registrable) *Registry {
	if err := r.Register(defs...); err != nil {
		panic(err)
	}
	return r
}

// HasWorkflow reports whether a workflow is registered under name.
func (r *Registry) HasWorkflow(name string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	_, ok := r.workflows[name]
	return ok
}

// WorkflowNames lists registered workflow names, sorted.
func (r *Registry) WorkflowNames() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.workflows))
	for n := range r.workflows {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// HasActivity reports whether an activity is registered under name.
func (r *Registry) HasActivity(name string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	_, ok := r.activities[name]
	return ok
}

// ErrorTypeActivityNotRegistered is the type of the non-retryable
// ApplicationError an attempt fails with when no activity of its name is
// registered: neither in Go (Register) nor, on an engine that has them,
// among the HTTP activities registered at run time.
const ErrorTypeActivityNotRegistered = "activity_not_registered"

// RunActivity runs one attempt of a registered activity on raw JSON
// input; an unknown name fails it for good (ErrorTypeActivityNotRegistered).
func (r *Registry) RunActivity(ctx *ActivityContext, name string, input json.RawMessage) (json.RawMessage, error) {
	r.mu.RLock()
	def, ok := r.activities[name]
	r.mu.RUnlock()
	if !ok {
		return nil, NewNonRetryableError(ErrorTypeActivityNotRegistered, fmt.Sprintf("%v: %q", ErrUnknownActivity, name))
	}
	return def.run(ctx, input)
}

// checkNames refuses empty names and names already taken, by the
// registry or earlier in regs. The caller holds r.mu.
func (r *Registry) checkNames(regs []registration) error {
	seen := map[[2]string]bool{}
	for _, g := range regs {
		k := [2]string{g.kind, g.name}
		switch {
		case g.name == "":
			return fmt.Errorf("register %s: empty name", g.kind)
		case seen[k] || r.taken(g):
			return fmt.Errorf("register %s %q: %w", g.kind, g.name, ErrDuplicateName)
		}
		seen[k] = true
	}
	return nil
}

// taken reports whether g's name is registered for its kind.
func (r *Registry) taken(g registration) bool {
	if g.kind == "workflow" {
		_, ok := r.workflows[g.name]
		return ok
	}
	_, ok := r.activities[g.name]
	return ok
}

// add adds a checked registration. The caller holds r.mu.
func (r *Registry) add(g registration) {
	if g.kind == "workflow" {
		r.workflows[g.name] = g.wf
		if g.wf.concurrency.Limited() {
			r.limited.Store(true)
		}
		return
	}
	r.activities[g.name] = g.act
	if g.act.concurrency.Limited() || g.act.rate.Limited() {
		r.actLimited.Store(true)
	}
}

func (r *Registry) workflow(name string) (workflowDef, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	d, ok := r.workflows[name]
	return d, ok
}

// Workflow is a typed workflow definition: declare it once, register it,
// and use it (later) from typed clients so names cannot drift.
type Workflow[In, Out any] struct {
	name        string
	fn          func(ctx Context, in In) (Out, error)
	schema      json.RawMessage
	signals     []SignalDecl
	timeouts    WorkflowTimeouts
	concurrency ConcurrencyLimit
}

// NewWorkflow declares a workflow named name.
func NewWorkflow[In, Out any](name string, fn func(ctx Context, in In) (Out, error)) *Workflow[In, Out] {
	return &Workflow[In, Out]{name: name, fn: fn}
}

// Name is the registered name.
func (w *Workflow[In, Out]) Name() string { return w.name }

func (w *Workflow[In, Out]) registration() (registration, error) {
	sch, err := compileSchema(w.name, w.schema)
	if err != nil {
		return registration{}, err
	}
	sigs, err := signalTable(w.name, w.signals)
	if err != nil {
		return registration{}, err
	}
	if err := w.concurrency.Validate(); err != nil {
		return registration{}, fmt.Errorf("workflow %s: concurrency limit: %w", w.name, err)
	}
	def := workflowDef{name: w.name, run: w.run, schema: sch, signals: sigs, timeouts: w.timeouts, concurrency: w.concurrency}
	return registration{kind: "workflow", name: w.name, wf: def}, nil
}

func (w *Workflow[In, Out]) run(ctx Context, raw json.RawMessage) (json.RawMessage, error) {
	in, err := decodeValue[In](raw)
	if err != nil {
		return nil, NewNonRetryableError("invalid_input", fmt.Sprintf("decode input of workflow %s: %v", w.name, err))
	}
	out, err := w.fn(ctx, in)
	if err != nil {
		return nil, checkContinueAsNew[In](w.name, err)
	}
	return encodeOutput("workflow", w.name, out)
}

// Activity is a typed activity definition with default options.
type Activity[In, Out any] struct {
	name        string
	fn          func(ctx *ActivityContext, in In) (Out, error)
	opts        ActivityOptions
	concurrency ConcurrencyLimit
	rate        RateLimit
}

// NewActivity declares an activity; opts (at most one) are its defaults,
// which Execute's options override field by field.
func NewActivity[In, Out any](name string, fn func(ctx *ActivityContext, in In) (Out, error), opts ...ActivityOptions) *Activity[In, Out] {
	a := &Activity[In, Out]{name: name, fn: fn}
	if len(opts) > 0 {
		a.opts = opts[0]
	}
	return a
}

// Name is the registered name.
func (a *Activity[In, Out]) Name() string { return a.name }

func (a *Activity[In, Out]) registration() (registration, error) {
	if err := a.concurrency.Validate(); err != nil {
		return registration{}, fmt.Errorf("activity %s: concurrency limit: %w", a.name, err)
	}
	if err := a.rate.Validate(); err != nil {
		return registration{}, fmt.Errorf("activity %s: rate limit: %w", a.name, err)
	}
	if err := a.opts.checkPriority(); err != nil {
		return registration{}, fmt.Errorf("activity %s: %w", a.name, err)
	}
	def := activityDef{name: a.name, opts: a.opts, run: a.run, concurrency: a.concurrency, rate: a.rate}
	return registration{kind: "activity", name: a.name, act: def}, nil
}

func (a *Activity[In, Out]) run(ctx *ActivityContext, raw json.RawMessage) (json.RawMessage, error) {
	in, err := decodeValue[In](raw)
	if err != nil {
		return nil, NewNonRetryableError("invalid_input", fmt.Sprintf("decode input of activity %s: %v", a.name, err))
	}
	out, err := a.fn(ctx, in)
	if err != nil {
		return nil, err
	}
	return encodeOutput("activity", a.name, out)
}

// Execute schedules the activity from workflow code and returns its future.
// Several futures may be pending at once: activities run in parallel.
func (a *Activity[In, Out]) Execute(ctx Context, in In, opts ...ActivityOptions) Future[Out] {
	o := a.opts
	for _, extra := range opts {
		o = o.merge(extra)
	}
	if err := o.checkPriority(); err != nil {
		return Future[Out]{f: resolvedFuture(nil, fmt.Errorf("activity %s: %w", a.name, err))}
	}
	raw, err := encodeValue(in)
	if err != nil {
		return Future[Out]{f: resolvedFuture(nil, fmt.Errorf("encode input of activity %s: %w", a.name, err))}
	}
	return Future[Out]{f: startIn(ctx, EventActivityCancelRequested, func() *future { return ctx.state().scheduleActivity(a.name, raw, o.WithDefaults()) })}
}

// Signal is a typed signal definition: the same value is used by workflow
// code to receive and (later) by clients to send, so names cannot drift.
type Signal[T any] struct {
	name string
}

// NewSignal declares a signal named name carrying payloads of type T.
func NewSignal[T any](name string) Signal[T] { return Signal[T]{name: name} }

// Name is the signal name.
func (s Signal[T]) Name() string { return s.name }

// Receive blocks until a signal arrives and returns its payload. Signals
// are buffered: one that arrived before Receive is returned at once. A
// cancel request of ctx ends the wait with a *CanceledError.
func (s Signal[T]) Receive(ctx Context) (T, error) {
	st := ctx.state()
	st.await(func() bool { return st.hasSignal(s.name) || ctx.Err() != nil })
	if err := ctx.Err(); err != nil && !st.hasSignal(s.name) {
		var zero T
		return zero, err
	}
	return decodeValue[T](st.popSignal(s.name))
}

// TryReceive returns a buffered signal without blocking.
func (s Signal[T]) TryReceive(ctx Context) (T, bool, error) {
	st := ctx.state()
	if !st.hasSignal(s.name) {
		var zero T
		return zero, false, nil
	}
	v, err := decodeValue[T](st.popSignal(s.name))
	return v, true, err
}

// ReceiveWithTimeout waits at most d (a durable timer) for a signal.
// ok is false when the timer fired first. A cancel request of ctx ends
// the wait with a *CanceledError.
func (s Signal[T]) ReceiveWithTimeout(ctx Context, d time.Duration) (v T, ok bool, err error) {
	st := ctx.state()
	if st.hasSignal(s.name) {
		v, err = decodeValue[T](st.popSignal(s.name))
		return v, true, err
	}
	timer := startIn(ctx, EventTimerCanceled, func() *future { return st.startTimer(d) })
	st.await(func() bool { return st.hasSignal(s.name) || timer.ready })
	if !st.hasSignal(s.name) {
		return v, false, timer.err
	}
	v, err = decodeValue[T](st.popSignal(s.name))
	return v, true, err
}

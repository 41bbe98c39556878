package harvest

import (
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Registrable is a workflow or activity definition that a Registry accepts.
type Registrable interface {
	registerOn(r *Registry) error
}

// Registry holds the workflows and activities a node can run. It is safe
// for concurrent use; register everything before starting an engine.
type Registry struct {
	mu         sync.RWMutex
	workflows  map[string]workflowDef
	activities map[string]activityDef
}

type workflowDef struct {
	name   string
	run    func(ctx Context, input json.RawMessage) (json.RawMessage, error)
	schema *jsonschema.Schema // nil: any input
}

type activityDef struct {
	name string
	opts ActivityOptions
	run  func(ctx *ActivityContext, input json.RawMessage) (json.RawMessage, error)
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{workflows: map[string]workflowDef{}, activities: map[string]activityDef{}}
}

// Register adds definitions; a name used twice (per kind) is an error.
func (r *Registry) Register(defs ...Registrable) error {
	for _, d := range defs {
		if err := d.registerOn(r); err != nil {
			return err
		}
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

// RunActivity runs one attempt of a registered activity on raw JSON input.
func (r *Registry) RunActivity(ctx *ActivityContext, name string, input json.RawMessage) (json.RawMessage, error) {
	r.mu.RLock()
	def, ok := r.activities[name]
	r.mu.RUnlock()
	if !ok {
		return nil, NewNonRetryableError("unknown_activity", fmt.Sprintf("%v: %q", ErrUnknownActivity, name))
	}
	return def.run(ctx, input)
}

func (r *Registry) addWorkflow(d workflowDef) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if d.name == "" {
		return fmt.Errorf("register workflow: empty name")
	}
	if _, dup := r.workflows[d.name]; dup {
		return fmt.Errorf("register workflow %q: %w", d.name, ErrDuplicateName)
	}
	r.workflows[d.name] = d
	return nil
}

func (r *Registry) addActivity(d activityDef) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if d.name == "" {
		return fmt.Errorf("register activity: empty name")
	}
	if _, dup := r.activities[d.name]; dup {
		return fmt.Errorf("register activity %q: %w", d.name, ErrDuplicateName)
	}
	r.activities[d.name] = d
	return nil
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
	name   string
	fn     func(ctx Context, in In) (Out, error)
	schema json.RawMessage
}

// NewWorkflow declares a workflow named name.
func NewWorkflow[In, Out any](name string, fn func(ctx Context, in In) (Out, error)) *Workflow[In, Out] {
	return &Workflow[In, Out]{name: name, fn: fn}
}

// Name is the registered name.
func (w *Workflow[In, Out]) Name() string { return w.name }

func (w *Workflow[In, Out]) registerOn(r *Registry) error {
	sch, err := compileSchema(w.name, w.schema)
	if err != nil {
		return err
	}
	return r.addWorkflow(workflowDef{name: w.name, run: w.run, schema: sch})
}

func (w *Workflow[In, Out]) run(ctx Context, raw json.RawMessage) (json.RawMessage, error) {
	in, err := decodeValue[In](raw)
	if err != nil {
		return nil, NewNonRetryableError("invalid_input", fmt.Sprintf("decode input of workflow %s: %v", w.name, err))
	}
	out, err := w.fn(ctx, in)
	if err != nil {
		return nil, err
	}
	return encodeValue(out)
}

// Activity is a typed activity definition with default options.
type Activity[In, Out any] struct {
	name string
	fn   func(ctx *ActivityContext, in In) (Out, error)
	opts ActivityOptions
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

func (a *Activity[In, Out]) registerOn(r *Registry) error {
	return r.addActivity(activityDef{name: a.name, opts: a.opts, run: a.run})
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
	return encodeValue(out)
}

// Execute schedules the activity from workflow code and returns its future.
// Several futures may be pending at once: activities run in parallel.
func (a *Activity[In, Out]) Execute(ctx Context, in In, opts ...ActivityOptions) Future[Out] {
	o := a.opts
	for _, extra := range opts {
		o = o.merge(extra)
	}
	raw, err := encodeValue(in)
	if err != nil {
		return Future[Out]{f: resolvedFuture(nil, fmt.Errorf("encode input of activity %s: %w", a.name, err))}
	}
	return Future[Out]{f: ctx.state().scheduleActivity(a.name, raw, o.WithDefaults())}
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
// are buffered: one that arrived before Receive is returned at once.
func (s Signal[T]) Receive(ctx Context) (T, error) {
	st := ctx.state()
	st.await(func() bool { return st.hasSignal(s.name) })
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
// ok is false when the timer fired first.
func (s Signal[T]) ReceiveWithTimeout(ctx Context, d time.Duration) (v T, ok bool, err error) {
	st := ctx.state()
	if st.hasSignal(s.name) {
		v, err = decodeValue[T](st.popSignal(s.name))
		return v, true, err
	}
	timer := st.startTimer(d)
	st.await(func() bool { return st.hasSignal(s.name) || timer.ready })
	if !st.hasSignal(s.name) {
		return v, false, nil
	}
	v, err = decodeValue[T](st.popSignal(s.name))
	return v, true, err
}

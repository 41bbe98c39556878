package harvesttest

import (
	"cmp"
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine"
	"github.com/harvestd/harvest/internal/pgtest"
)

// Defaults of an Env.
const (
	// TimeoutDefault bounds every wait of an Env (Result, WaitFor, …) and
	// every call it makes to its engine.
	TimeoutDefault = 30 * time.Second
	// PollIntervalDefault is the engine's backstop poll. The engine is
	// woken by its own work and by the clock, so the poll matters little.
	PollIntervalDefault = 200 * time.Millisecond
	// waitStep is how often a wait reads the run again.
	waitStep = 10 * time.Millisecond
)

// Env is one engine, running one shard on a private database, with a test
// clock. Create it with New; its methods fail the test (t.Fatal) on any
// error, so they return only what a test asserts on. Its methods may be
// called from the test's goroutine only (they call t.Fatal).
type Env struct {
	t       testing.TB
	eng     *engine.Engine
	pool    *pgxpool.Pool
	clock   *Clock
	fakes   *fakes
	timeout time.Duration
}

// Option configures an Env.
type Option func(*options)

type options struct {
	cfg     engine.Config
	timeout time.Duration
}

// WithConfig changes the engine's configuration before it starts (its
// Clock and Activities are the Env's own and are set after).
func WithConfig(fn func(cfg *engine.Config)) Option {
	return func(o *options) { fn(&o.cfg) }
}

// WithTimeout bounds the Env's waits (default TimeoutDefault).
func WithTimeout(d time.Duration) Option {
	return func(o *options) { o.timeout = d }
}

// WithLogger gives the engine a logger (default: none).
func WithLogger(l zerolog.Logger) Option {
	return func(o *options) { o.cfg.Logger = l }
}

// New starts an engine for reg on a database of its own and returns its
// Env; the engine stops and the database is dropped when the test ends.
// The database is on the private PostgreSQL server of the test binary,
// started from the local PostgreSQL binaries on first use, or on the
// server HARVEST_TEST_DSN names. New skips the test when neither exists.
func New(t testing.TB, reg *harvest.Registry, opts ...Option) *Env {
	t.Helper()
	o := options{cfg: engine.Config{NodeID: "harvesttest", PollInterval: PollIntervalDefault, Logger: zerolog.Nop()}}
	for _, opt := range opts {
		opt(&o)
	}
	pgtest.Lazy(t)
	env := &Env{t: t, pool: pgtest.NewPool(t), clock: NewClock(), fakes: newFakes(reg),
		timeout: cmp.Or(o.timeout, TimeoutDefault)}
	o.cfg.Clock, o.cfg.Activities = env.clock, env.fakes
	eng, err := engine.New(env.pool, reg, o.cfg)
	env.check(err, "new engine")
	ctx, cancel := env.ctx()
	defer cancel()
	env.check(eng.Start(ctx), "start engine")
	t.Cleanup(eng.Stop)
	env.eng = eng
	return env
}

// Engine is the Env's engine, for what the Env does not wrap.
func (e *Env) Engine() *engine.Engine { return e.eng }

// Pool is the pool on the Env's database.
func (e *Env) Pool() *pgxpool.Pool { return e.pool }

// Clock is the Env's test clock, the engine's workflow time.
func (e *Env) Clock() *Clock { return e.clock }

// Now is the current workflow time (Clock().Now()).
func (e *Env) Now() time.Time { return e.clock.Now() }

// Advance moves workflow time d ahead and returns it (Clock().Advance):
// what came due runs at once.
func (e *Env) Advance(d time.Duration) time.Time { return e.clock.Advance(d) }

// ReplaceActivity makes the engine run fn instead of the activity
// registered as name, from the next attempt on: replace it before starting
// the runs that call it. The fake gets the same ActivityContext the real
// activity would (attempt, idempotency key, heartbeats, deadline), and its
// errors are retried by the activity's retry policy.
func (e *Env) ReplaceActivity(name string, fn ActivityFunc) {
	e.fakes.replace(name, fn)
}

// WithDelay makes the run's first workflow task due d of workflow time
// after the start (Advance passes it).
func WithDelay(d time.Duration) StartOption {
	return func(r *engine.StartRequest) { r.Delay = &d }
}

// WithExecutionTimeout starts with an execution timeout: the run closes
// TIMED_OUT once the clock passes it.
func WithExecutionTimeout(d time.Duration) StartOption {
	return func(r *engine.StartRequest) { r.ExecutionTimeout = &d }
}

// WithRunTimeout starts with a run timeout (see engine.StartRequest).
func WithRunTimeout(d time.Duration) StartOption {
	return func(r *engine.StartRequest) { r.RunTimeout = &d }
}

// StartOption changes a start request.
type StartOption func(*engine.StartRequest)

// WithIdempotencyKey starts with a start idempotency key: a second start
// with the key inside the window returns the first run, Deduplicated.
func WithIdempotencyKey(key string) StartOption {
	return func(r *engine.StartRequest) { r.IdempotencyKey = key }
}

// WithWorkflowID starts with a business id instead of a random one.
func WithWorkflowID(id string) StartOption {
	return func(r *engine.StartRequest) { r.WorkflowID = id }
}

// Start starts a run of the named workflow on input (encoded as JSON).
func (e *Env) Start(workflow string, input any, opts ...StartOption) engine.StartResult {
	e.t.Helper()
	req := engine.StartRequest{WorkflowName: workflow, Input: e.encode(input)}
	for _, opt := range opts {
		opt(&req)
	}
	ctx, cancel := e.ctx()
	defer cancel()
	res, err := e.eng.StartWorkflow(ctx, req)
	e.check(err, "start "+workflow)
	return res
}

// SignalOption changes a signal request.
type SignalOption func(*engine.SignalRequest)

// WithSignalKey signals with an idempotency key: a second signal with it
// is not delivered again.
func WithSignalKey(key string) SignalOption {
	return func(r *engine.SignalRequest) { r.IdempotencyKey = key }
}

// Signal sends the run a signal with payload (encoded as JSON).
func (e *Env) Signal(id uuid.UUID, signal string, payload any, opts ...SignalOption) engine.SignalResult {
	e.t.Helper()
	req := engine.SignalRequest{ExecutionID: id, SignalName: signal, Payload: e.encode(payload)}
	for _, opt := range opts {
		opt(&req)
	}
	ctx, cancel := e.ctx()
	defer cancel()
	res, err := e.eng.Signal(ctx, req)
	e.check(err, "signal "+signal)
	return res
}

// Update sends the run the update name with args under updateID and
// waits, up to the env's timeout, for its handler's answer. A refusal
// (harvest.ErrUpdateRejected, ErrUnknownUpdate, ErrUpdateArgs) or a
// closed run's *engine.TerminalError is returned, not failed: tests assert
// them.
func (e *Env) Update(id uuid.UUID, name, updateID string, args any) (engine.UpdateResult, error) {
	e.t.Helper()
	ctx, cancel := e.ctx()
	defer cancel()
	return e.eng.Update(ctx, engine.UpdateRequest{ExecutionID: id, Name: name, UpdateID: updateID, Args: e.encode(args),
		Wait: e.timeout})
}

// UpdateWithStart sends the update name with args under updateID to the
// run of workflow holding workflowID, starting it with input first when
// none is running (engine.Engine.UpdateWithStart), and waits for the
// answer as Update does; opts change the start.
func (e *Env) UpdateWithStart(workflow, workflowID string, input any, name, updateID string, args any, opts ...StartOption) (engine.UpdateWithStartResult, error) {
	e.t.Helper()
	start := engine.StartRequest{WorkflowName: workflow, WorkflowID: workflowID, Input: e.encode(input)}
	for _, opt := range opts {
		opt(&start)
	}
	ctx, cancel := e.ctx()
	defer cancel()
	return e.eng.UpdateWithStart(ctx, engine.UpdateWithStartRequest{Start: start,
		Update: engine.UpdateRequest{Name: name, UpdateID: updateID, Args: e.encode(args), Wait: e.timeout}})
}

// Reset replaces the current run of id's chain by a new run that replays
// id's history up to point ("first", "last_task", or an event id as
// text) under key (engine.Engine.Reset), and returns the new run; a
// refused reset fails the test.
func (e *Env) Reset(id uuid.UUID, point, key string) engine.ResetResult {
	e.t.Helper()
	req := engine.ResetRequest{ExecutionID: id, Point: point, IdempotencyKey: key}
	if n, err := strconv.ParseInt(point, 10, 64); err == nil {
		req.Point, req.EventID = "", n
	}
	ctx, cancel := e.ctx()
	defer cancel()
	res, err := e.eng.Reset(ctx, req)
	if err != nil {
		e.t.Fatalf("harvesttest: reset %s to %s: %v", id, point, err)
	}
	return res
}

// Result waits for the run to close and returns how it ended.
func (e *Env) Result(id uuid.UUID) engine.Outcome {
	e.t.Helper()
	ctx, cancel := e.ctx()
	defer cancel()
	o, err := e.eng.Result(ctx, id, e.timeout)
	e.check(err, "result")
	if !engine.IsTerminal(o.State) {
		e.t.Fatalf("harvesttest: run %s still %s after %s (last task error %q)", id, o.State, e.timeout, o.LastError)
	}
	return o
}

// Output waits for the run to complete and decodes its output into out;
// a run that closed otherwise fails the test.
func (e *Env) Output(id uuid.UUID, out any) {
	e.t.Helper()
	o := e.Result(id)
	if o.State != engine.StateCompleted {
		e.t.Fatalf("harvesttest: run %s ended %s: %s", id, o.State, o.Error)
	}
	e.check(json.Unmarshal(o.Output, out), "decode output")
}

// Describe returns the run with its pending activities and timers.
func (e *Env) Describe(id uuid.UUID) engine.Description {
	e.t.Helper()
	ctx, cancel := e.ctx()
	defer cancel()
	d, err := e.eng.Describe(ctx, id)
	e.check(err, "describe")
	return d
}

// History returns the run's whole history, every page.
func (e *Env) History(id uuid.UUID) []harvest.Event {
	e.t.Helper()
	var events []harvest.Event
	q := engine.HistoryQuery{After: -1, Limit: engine.HistoryPageMax}
	ctx, cancel := e.ctx()
	defer cancel()
	for {
		page, err := e.eng.History(ctx, id, q)
		e.check(err, "history")
		events = append(events, page.Events...)
		if page.NextCursor == nil {
			return events
		}
		q.After = *page.NextCursor
	}
}

// ctx bounds one call to the engine.
func (e *Env) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), e.timeout)
}

func (e *Env) encode(v any) json.RawMessage {
	e.t.Helper()
	if raw, ok := v.(json.RawMessage); ok {
		return raw
	}
	b, err := json.Marshal(v)
	e.check(err, "encode")
	return b
}

func (e *Env) check(err error, what string) {
	e.t.Helper()
	if err != nil {
		e.t.Fatalf("harvesttest: %s: %v", what, err)
	}
}

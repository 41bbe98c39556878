package harvest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/rs/zerolog"
)

var (
	// ErrUnknownQuery is returned by RunQuery when the workflow code did
	// not register a handler under the name during replay.
	ErrUnknownQuery = errors.New("unknown query")
	// ErrQueryCommand is returned by RunQuery when the query handler
	// issued an SDK command (activity, timer, sleep, signal receive, a
	// blocking wait…): a query reads the workflow's state, it never
	// changes it.
	ErrQueryCommand = errors.New("query handler issued a workflow command")
	// ErrQueryArgs is returned by RunQuery when the arguments do not
	// decode into the handler's argument type.
	ErrQueryArgs = errors.New("query arguments do not decode")
)

// queryHandler decodes a query's arguments, runs the handler and encodes
// its result.
type queryHandler func(args json.RawMessage) (json.RawMessage, error)

// SetQueryHandler registers, from workflow code, the handler of the query
// name: RunQuery (GET or POST /workflows/{id}/query/{name}) replays the
// run's history, then calls the handler registered last under name. The
// handler reads the workflow's local state, typically variables its
// closure shares with the workflow function; it must not issue commands
// (activities, timers, Sleep, signal receives, blocking waits): the query
// fails with ErrQueryCommand. Registering again under a name replaces the
// handler. Args is decoded from the query's JSON arguments (empty: zero
// value), Out is encoded as JSON.
func SetQueryHandler[Args, Out any](ctx Context, name string, handler func(args Args) (Out, error)) {
	s := ctx.state()
	if s.queries == nil {
		s.queries = map[string]queryHandler{}
	}
	s.queries[name] = func(raw json.RawMessage) (json.RawMessage, error) {
		a, err := decodeValue[Args](raw)
		if err != nil {
			return nil, fmt.Errorf("query %q: %w: %v", name, ErrQueryArgs, err)
		}
		out, err := handler(a)
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(out)
		if err != nil {
			return nil, fmt.Errorf("query %q: encode result: %w", name, err)
		}
		return b, nil
	}
}

// queryCommand is the panic value that ends a query handler which issued
// a command.
type queryCommand struct{}

// failIfQuery ends the running query handler: in query mode no command
// may be issued nor any wait started.
func (s *runState) failIfQuery() {
	if s.querying {
		panic(queryCommand{})
	}
}

// RunQuery replays task.History through the workflow code, recording no
// command, then calls the query handler the code registered under name
// (SetQueryHandler) and returns its JSON result. It works on running and
// closed runs. An unregistered name is ErrUnknownQuery, a handler that
// issues a command ErrQueryCommand; a handler's own error is returned as
// is. Replay failures are RunWorkflowTask's. ctx bounds the replay.
func (r *Registry) RunQuery(ctx context.Context, task WorkflowTask, name string, args json.RawMessage) (json.RawMessage, error) {
	if len(task.History) == 0 || task.History[0].Type != EventWorkflowStarted {
		return nil, errors.New("run query: history must start with WorkflowStarted")
	}
	def, ok := r.workflow(task.Info.WorkflowName)
	if !ok {
		return nil, fmt.Errorf("run query on %q: %w", task.Info.WorkflowName, ErrUnknownWorkflow)
	}
	var started WorkflowStartedData
	if err := json.Unmarshal(task.History[0].Data, &started); err != nil {
		return nil, fmt.Errorf("run query: decode WorkflowStarted: %w", err)
	}
	s := newRunState(task, started, zerolog.Nop())
	s.start(def, started.Input)
	defer s.stop()
	if err := s.drive(ctx, task.History[1:]); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	h, ok := s.queries[name]
	if !ok {
		return nil, fmt.Errorf("query %q of %s: %w", name, task.Info.WorkflowName, ErrUnknownQuery)
	}
	return s.runQuery(name, h, args)
}

// runQuery calls h on the driver's goroutine, in query mode.
func (s *runState) runQuery(name string, h queryHandler, args json.RawMessage) (out json.RawMessage, err error) {
	s.querying = true
	defer func() {
		s.querying = false
		if r := recover(); r != nil {
			if _, ok := r.(queryCommand); ok {
				out, err = nil, fmt.Errorf("query %q: %w", name, ErrQueryCommand)
				return
			}
			out, err = nil, &PanicError{Value: fmt.Sprint(r), Stack: string(debug.Stack())}
		}
	}()
	return h(args)
}

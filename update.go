package harvest

import (
	"encoding/json"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
)

// Updates: a synchronous, validated request into a running workflow,
// answered with the handler's result.
//
// The engine validates an update before it accepts it, by the query
// machinery: SetHandler registers, beside the handler, the query
// UpdateQueryPrefix + name, which decodes the arguments and calls the
// validator in query mode (it may read the workflow's state, never issue
// a command). A rejected update writes nothing. An accepted one is the
// system signal UpdateSignal keyed by its update id (the keyed signal's
// dedup, per chain, makes a retried id a duplicate); its delivery starts
// the handler in a coroutine of its own, which may run activities, sleep
// and wait, and whose return issues the UpdateCompleted command. An
// update delivered before its handler is registered waits for it (and is
// carried across a continue-as-new as an unconsumed signal).

const (
	// UpdateSignal is the system signal an accepted update arrives as;
	// its payload is an UpdateRequest.
	UpdateSignal = ReservedPrefix + "update"
	// UpdateKeyPrefix starts the idempotency key of an update's signal:
	// the prefix and its update id.
	UpdateKeyPrefix = ReservedPrefix + "upd:"
	// UpdateQueryPrefix starts the name of the query that validates an
	// update: the prefix and the update's name.
	UpdateQueryPrefix = ReservedPrefix + "update:"
	// UpdateWithStartKeyPrefix starts the idempotency key of an
	// update-with-start's start: the prefix and its update id, so a retry
	// finds the run the first attempt started or attached to.
	UpdateWithStartKeyPrefix = ReservedPrefix + "uws:"
)

// UpdateRequest is the payload of UpdateSignal: the update's id, name and
// arguments.
type UpdateRequest struct {
	UpdateID string          `json:"update_id"`
	Name     string          `json:"name"`
	Args     json.RawMessage `json:"args,omitempty"`
}

// UpdateCompletedData is the data of UpdateCompleted: the update's
// result, or its error.
type UpdateCompletedData struct {
	UpdateID string          `json:"update_id"`
	Name     string          `json:"name"`
	Output   json.RawMessage `json:"output,omitempty"`
	Error    *ErrorInfo      `json:"error,omitempty"`
}

// UpdateRejectedError is a validator's refusal of an update.
type UpdateRejectedError struct {
	Update string
	Err    error
}

func (e *UpdateRejectedError) Error() string {
	return fmt.Sprintf("update %q rejected: %v", e.Update, e.Err)
}

// Is matches ErrUpdateRejected.
func (e *UpdateRejectedError) Is(target error) bool { return target == ErrUpdateRejected }

// Unwrap is the validator's error.
func (e *UpdateRejectedError) Unwrap() error { return e.Err }

// Update is an update a workflow handles: In its arguments, Out its
// result.
type Update[In, Out any] struct{ name string }

// NewUpdate declares the update name.
func NewUpdate[In, Out any](name string) Update[In, Out] { return Update[In, Out]{name: name} }

// Name is the update's name.
func (u Update[In, Out]) Name() string { return u.name }

// updateHandler runs an update's handler on its decoded arguments and
// encodes its result.
type updateHandler func(ctx Context, args json.RawMessage) (json.RawMessage, error)

// SetHandler registers, from workflow code, the handler of u and its
// optional validator (nil: every update whose arguments decode is
// accepted). The validator runs before the update is accepted, on the
// run's current state, in query mode: it reads the workflow's variables
// and returns an error to refuse the update (nothing is recorded); it
// must not issue commands or wait. The handler runs once per accepted
// update id, in a coroutine of its own, and may do anything workflow
// code does; its return is the update's result. Registering again
// replaces both.
func (u Update[In, Out]) SetHandler(ctx Context, handler func(ctx Context, in In) (Out, error), validator func(in In) error) {
	s := ctx.state()
	if s.updates == nil {
		s.updates = map[string]updateHandler{}
	}
	s.updates[u.name] = func(ctx Context, raw json.RawMessage) (json.RawMessage, error) {
		in, err := decodeValue[In](raw)
		if err != nil {
			return nil, fmt.Errorf("update %q: %w: %v", u.name, ErrQueryArgs, err)
		}
		out, err := handler(ctx, in)
		if err != nil {
			return nil, err
		}
		return json.Marshal(out)
	}
	SetQueryHandler(ctx, UpdateQueryPrefix+u.name, func(in In) (struct{}, error) {
		if validator == nil {
			return struct{}{}, nil
		}
		if err := validator(in); err != nil {
			return struct{}{}, &UpdateRejectedError{Update: u.name, Err: err}
		}
		return struct{}{}, nil
	})
	s.dispatchUpdates()
}

// IsUpdateQuery reports whether a query name is an update's validation.
func IsUpdateQuery(name string) bool { return strings.HasPrefix(name, UpdateQueryPrefix) }

// dispatchUpdates starts, in arrival order, the handler of every update
// delivered whose handler is registered; the others wait.
func (s *runState) dispatchUpdates() {
	waiting := s.signals[UpdateSignal]
	kept := waiting[:0:0]
	for _, a := range waiting {
		var req UpdateRequest
		if err := json.Unmarshal(a.payload, &req); err != nil {
			continue // not an update: never handed out
		}
		h, ok := s.updates[req.Name]
		if !ok {
			kept = append(kept, a)
			continue
		}
		s.startUpdate(req, h)
	}
	s.signals[UpdateSignal] = kept
}

// startUpdate runs the handler of req in a coroutine of its own, with the
// run's root context, which issues UpdateCompleted when it returns.
func (s *runState) startUpdate(req UpdateRequest, h updateHandler) {
	if s.updating == nil {
		s.updating = map[string]string{}
	}
	s.updating[req.UpdateID] = req.Name
	s.spawn(func() {
		out, err := s.runUpdate(wfContext{s: s}, h, req.Args)
		if s.panicErr == nil {
			s.completeUpdate(req.UpdateID, req.Name, out, err)
		}
	})
}

// runUpdate calls h, turning a panic into the task's PanicError.
func (s *runState) runUpdate(ctx Context, h updateHandler, args json.RawMessage) (out json.RawMessage, err error) {
	defer func() {
		if r := recover(); r != nil {
			s.panicErr = &PanicError{Value: fmt.Sprint(r), Stack: string(debug.Stack())}
		}
	}()
	return h(ctx, args)
}

// completeUpdate issues the update's UpdateCompleted.
func (s *runState) completeUpdate(id, name string, out json.RawMessage, err error) {
	delete(s.updating, id)
	s.issue(EventUpdateCompleted, id, name, args{}, func() any {
		d := UpdateCompletedData{UpdateID: id, Name: name, Output: out}
		if err != nil {
			info := ToErrorInfo(err)
			d.Output, d.Error = nil, &info
		}
		return d
	})
}

// abandonUpdates answers, before the run continues as new, the updates
// whose handlers still run: their runs end here.
func (s *runState) abandonUpdates() {
	ids := make([]string, 0, len(s.updating))
	for id := range s.updating {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		s.completeUpdate(id, s.updating[id], nil, errUpdateGone)
	}
}

package harvest

import (
	"encoding/json"
	"fmt"
)

// RemoteActivity is an activity a workflow calls by name without a Go
// function: an HTTP activity an admin registers at run time
// (POST /api/harvest/admin/activities, harvestctl activity register).
// Execute schedules it like any activity; the engine that runs the
// attempt finds the registration by name and POSTs the input to its URL
// as an HTTP activity does (see NewHTTPActivity: the same headers,
// Idempotency-Key, address rules and answer cap). Nothing about the
// registration is read during replay: history holds the call, the
// attempts read the registration as it is when they run.
//
// Options. The registration's timeout bounds each attempt, together with
// the call's start-to-close (the shorter wins). The call's retry policy
// wins when it has one (NewRemoteActivity's defaults or Execute's
// options); without one the registration's applies, else the default.
//
// A name registered in Go on the engine's node runs the Go activity. A
// name registered nowhere fails the attempt for good, with an
// ApplicationError of type ErrorTypeActivityNotRegistered: the workflow
// sees it at once (unlike Temporal, which retries an unknown activity
// type until a worker offers it).
type RemoteActivity[In, Out any] struct {
	name string
	opts ActivityOptions
}

// NewRemoteActivity declares a call of the runtime-registered activity
// name; opts (at most one) are its defaults, which Execute's options
// override field by field.
func NewRemoteActivity[In, Out any](name string, opts ...ActivityOptions) *RemoteActivity[In, Out] {
	a := &RemoteActivity[In, Out]{name: name}
	if len(opts) > 0 {
		a.opts = opts[0]
	}
	return a
}

// Name is the activity's registered name.
func (a *RemoteActivity[In, Out]) Name() string { return a.name }

// Execute schedules the activity from workflow code and returns its
// future.
func (a *RemoteActivity[In, Out]) Execute(ctx Context, in In, opts ...ActivityOptions) Future[Out] {
	o := a.options(opts)
	raw, err := encodeValue(in)
	if err != nil {
		return Future[Out]{f: resolvedFuture(nil, fmt.Errorf("encode input of activity %s: %w", a.name, err))}
	}
	return Future[Out]{f: startIn(ctx, EventActivityCancelRequested, func() *future { return ctx.state().scheduleActivity(a.name, raw, o) })}
}

// options are the call's options: the defaults, then opts, with the
// retry policy left to the registration when neither has one.
func (a *RemoteActivity[In, Out]) options(opts []ActivityOptions) ActivityOptions {
	o := a.opts
	for _, extra := range opts {
		o = o.merge(extra)
	}
	registrationRetry := o.Retry == nil
	o = o.WithDefaults()
	o.registrationRetry = registrationRetry
	return o
}

// CallHTTPActivity makes one attempt of an HTTP activity registered at
// run time: NewHTTPActivity's POST of input to url with headers (through
// the engine's outbound HTTP, so its address rules apply) and the
// answer's JSON as the output. Engines call it.
func CallHTTPActivity(ctx *ActivityContext, url string, headers map[string]string, input json.RawMessage) (json.RawMessage, error) {
	if len(input) == 0 {
		input = json.RawMessage("null")
	}
	return callHTTP(ctx, url, HTTPActivityOptions{Headers: headers}, input)
}

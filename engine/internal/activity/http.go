package activity

import (
	"encoding/json"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/httpactivity"
)

// HTTP activities registered at run time (harvest.RemoteActivity): an
// attempt of an activity the engine's registry lacks runs the
// registration its resolver holds under the name, if any. The
// registration is read when the attempt runs, never during replay: its
// timeout lowers the attempt's start-to-close, and its retry policy
// replaces the call's default one when the call left it to the
// registration (ActivityOptions.RegistrationRetry). A name registered
// nowhere goes to the ActivityRunner as before, which fails it for good
// (harvest.ErrorTypeActivityNotRegistered) unless a fake serves it.

// Resolver finds the HTTP activities registered at run time: a
// cluster's raft catalog, a dev node's shard database. An error says it
// cannot tell now whether name is registered (a replica that may trail
// its leader's): the attempt fails with it and is retried, never failed
// for good as activity_not_registered.
type Resolver interface {
	HTTPActivity(name string) (httpactivity.Config, bool, error)
}

// remoteCall is what an attempt of a runtime-registered name runs: the
// registration, or the error its lookup gave.
type remoteCall struct {
	reg *httpactivity.Config
	err error
}

// httpActivity is the registration attempt t runs (nil: the registry's,
// or the ActivityRunner's), and t with the registration's timeout and
// retry policy applied.
func (a *Attempts) httpActivity(t Task) (Task, *remoteCall) {
	if a.d.HTTP == nil || (a.d.Reg != nil && a.d.Reg.HasActivity(t.Name)) {
		return t, nil
	}
	reg, ok, err := a.d.HTTP.HTTPActivity(t.Name)
	switch {
	case err != nil:
		return t, &remoteCall{err: err}
	case !ok:
		return t, nil
	}
	opts := t.Options.WithDefaults()
	if reg.Timeout > 0 && reg.Timeout < opts.StartToClose {
		t.Options.StartToClose = reg.Timeout
	}
	if reg.Retry != nil && t.Options.RegistrationRetry() {
		p := retryPolicy(*reg.Retry)
		t.Options.Retry = &p
	}
	return t, &remoteCall{reg: &reg}
}

// retryPolicy is a registration's retry policy as the engine applies it.
func retryPolicy(r httpactivity.Retry) harvest.RetryPolicy {
	return harvest.RetryPolicy{MaxAttempts: r.MaxAttempts, InitialInterval: r.InitialInterval,
		BackoffCoefficient: r.BackoffCoefficient, MaxInterval: r.MaxInterval,
		NonRetryableErrors: r.NonRetryableErrors}.WithDefaults()
}

// callHTTPActivity runs one attempt of a registration.
func callHTTPActivity(actx *harvest.ActivityContext, call *remoteCall, input json.RawMessage) (json.RawMessage, error) {
	if call.err != nil {
		return nil, call.err
	}
	return harvest.CallHTTPActivity(actx, call.reg.URL, call.reg.Headers, input)
}

package harvest

import (
	"encoding/json"
	"fmt"
)

// ExternalSignalError is what the future of SignalExternal returns when the
// target refused the signal for good: Info.Type is "not_found" (no such
// run), "execution_terminal" (the run is closed), "unknown_signal" or
// "invalid_payload" (the target's workflow declares other signals).
type ExternalSignalError struct {
	ExecutionID string
	SignalName  string
	Info        ErrorInfo
}

func (e *ExternalSignalError) Error() string {
	return fmt.Sprintf("signal %s to %s refused: %s", e.SignalName, e.ExecutionID, e.Info.Message)
}

// Is makes errors.Is(err, ErrExternalSignal) true.
func (e *ExternalSignalError) Is(target error) bool { return target == ErrExternalSignal }

// SignalExternal sends sig with payload to the run executionID (any
// shard, any node) and returns a future that resolves once the target
// recorded it, or fails with an *ExternalSignalError when the target
// refused it for good (not found, closed, undeclared signal).
//
// The send is exactly once: the workflow task records the intent
// (SignalExternalInitiated) in its own transaction, and the engine then
// sends a keyed signal under ExternalSignalKey(this run, command id)
// until it is answered, so a retried or replayed send lands once.
func SignalExternal[T any](ctx Context, executionID string, sig Signal[T], payload T) Future[struct{}] {
	raw, err := encodeValue(payload)
	if err != nil {
		return Future[struct{}]{f: resolvedFuture(nil, fmt.Errorf("encode payload of signal %s: %w", sig.name, err))}
	}
	if err := ctx.Err(); err != nil {
		return Future[struct{}]{f: resolvedFuture(nil, err)}
	}
	return Future[struct{}]{f: ctx.state().signalExternal(executionID, sig.name, raw)}
}

func (s *runState) signalExternal(target, name string, payload json.RawMessage) *future {
	id := s.nextSeq()
	f := &future{}
	a := externalArgs(target, name, payload)
	s.issue(EventSignalExternalInitiated, id, name, a, func() any {
		return SignalExternalInitiatedData{CommandID: id, ExecutionID: target, SignalName: name, Payload: payload,
			IdempotencyKey: ExternalSignalKey(s.info.ExecutionID, id), Digest: a.sum}
	})
	s.externals[id] = f
	return f
}

// externalAnswered resolves a SignalExternal future from its outcome.
func (s *runState) externalAnswered(ev Event, commandID string, info ErrorInfo) error {
	f, ok := s.externals[commandID]
	if !ok {
		return &NonDeterminismError{EventID: ev.EventID, Message: fmt.Sprintf("%s for signal %s that the code did not send", ev.Type, commandID)}
	}
	if ev.Type == EventExternalSignalFailed {
		var d SignalExternalInitiatedData
		for _, rec := range s.recorded {
			if id, _ := identity(rec); rec.Type == EventSignalExternalInitiated && id == commandID {
				_ = json.Unmarshal(rec.Data, &d)
			}
		}
		f.resolve(nil, &ExternalSignalError{ExecutionID: d.ExecutionID, SignalName: d.SignalName, Info: info})
	} else {
		f.resolve(nil, nil)
	}
	f.seq = s.tick()
	return nil
}

func externalDigest(target, name string, payload json.RawMessage) string {
	d := newDigest("signal_external", len(target)+len(name)+len(payload))
	d.str(target)
	d.str(name)
	d.bytes(payload)
	return d.sum()
}

func externalArgs(target, name string, payload json.RawMessage) args {
	return args{sum: externalDigest(target, name, payload), field: "target or payload"}
}

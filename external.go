package harvest

import (
	"cmp"
	"encoding/json"
	"fmt"
)

// ExternalSignalError is what the future of SignalExternal or
// SignalExternalWorkflow returns when the target refused the signal for
// good: Info.Type is "not_found" (no such run; for a workflow id, no run
// of it is running), "execution_terminal" (the run is closed),
// "unknown_signal" or "invalid_payload" (the target's workflow declares
// other signals). ExecutionID is the target run, empty for a workflow id
// that did not resolve; WorkflowName and WorkflowID are set for a
// SignalExternalWorkflow target.
type ExternalSignalError struct {
	ExecutionID  string
	WorkflowName string
	WorkflowID   string
	SignalName   string
	Info         ErrorInfo
}

func (e *ExternalSignalError) Error() string {
	target := e.ExecutionID
	if e.WorkflowID != "" {
		target = "workflow " + e.WorkflowName + "/" + e.WorkflowID
	}
	return fmt.Sprintf("signal %s to %s refused: %s", e.SignalName, target, e.Info.Message)
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
	return Future[struct{}]{f: ctx.state().signalExternal(externalTarget{executionID: executionID}, sig.name, raw)}
}

// SignalExternalWorkflow sends sig with payload to the current run of the
// workflow id workflowID of workflow workflowName (any shard, any node):
// the run holding that id and still running when the send is performed.
// The future resolves once that run recorded the signal, or fails with an
// *ExternalSignalError: Info.Type "not_found" when no run of the id is
// running (none was started, or its run closed: like Temporal, a closed
// workflow is not signalled), or the target's own refusal.
//
// The send is exactly once like SignalExternal's: the engine resolves the
// workflow id once, records the run it resolved to in the send's durable
// outbox row before it signals, and every retry signals that run under
// the same ExternalSignalKey, so a send never reaches two runs. A run
// that continued as new is followed to its chain's current run, as any
// signal is. The workflow name is needed because runs are placed by
// (workflow name, workflow id).
func SignalExternalWorkflow[T any](ctx Context, workflowName, workflowID string, sig Signal[T], payload T) Future[struct{}] {
	if workflowName == "" || workflowID == "" {
		return Future[struct{}]{f: resolvedFuture(nil, fmt.Errorf("signal %s: workflow name and workflow id must not be empty", sig.name))}
	}
	raw, err := encodeValue(payload)
	if err != nil {
		return Future[struct{}]{f: resolvedFuture(nil, fmt.Errorf("encode payload of signal %s: %w", sig.name, err))}
	}
	if err := ctx.Err(); err != nil {
		return Future[struct{}]{f: resolvedFuture(nil, err)}
	}
	t := externalTarget{workflowName: workflowName, workflowID: workflowID}
	return Future[struct{}]{f: ctx.state().signalExternal(t, sig.name, raw)}
}

// externalTarget is a SignalExternal target: a run, or a workflow id.
type externalTarget struct{ executionID, workflowName, workflowID string }

func (s *runState) signalExternal(t externalTarget, name string, payload json.RawMessage) *future {
	id := s.nextSeq()
	f := &future{}
	a := externalArgs(t, name, payload)
	s.issue(EventSignalExternalInitiated, id, name, a, func() any {
		return SignalExternalInitiatedData{CommandID: id, ExecutionID: t.executionID, WorkflowName: t.workflowName,
			WorkflowID: t.workflowID, SignalName: name, Payload: payload,
			IdempotencyKey: ExternalSignalKey(s.keyBase, id), Digest: a.sum}
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
		f.resolve(nil, &ExternalSignalError{ExecutionID: cmp.Or(d.ExecutionID, failedTarget(ev)), WorkflowName: d.WorkflowName,
			WorkflowID: d.WorkflowID, SignalName: d.SignalName, Info: info})
	} else {
		f.resolve(nil, nil)
	}
	f.seq = s.tick()
	return nil
}

// failedTarget is the run an ExternalSignalFailed names (a workflow id
// target that resolved before the run refused the signal).
func failedTarget(ev Event) string {
	var d OutboxFailedData
	_ = json.Unmarshal(ev.Data, &d)
	return d.ExecutionID
}

// externalDigest digests a send: an execution id target as it always
// was (recorded histories keep their digests), a workflow id target
// under a domain of its own.
func externalDigest(t externalTarget, name string, payload json.RawMessage) string {
	if t.workflowID == "" {
		d := newDigest("signal_external", len(t.executionID)+len(name)+len(payload))
		d.str(t.executionID)
		d.str(name)
		d.bytes(payload)
		return d.sum()
	}
	d := newDigest("signal_external_workflow", len(t.workflowName)+len(t.workflowID)+len(name)+len(payload))
	d.str(t.workflowName)
	d.str(t.workflowID)
	d.str(name)
	d.bytes(payload)
	return d.sum()
}

func externalArgs(t externalTarget, name string, payload json.RawMessage) args {
	return args{sum: externalDigest(t, name, payload), field: "target or payload"}
}

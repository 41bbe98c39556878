package harvest

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// SignalDecl is a signal a workflow can declare with WithSignals: any
// Signal[T].
type SignalDecl interface {
	// Name is the signal name.
	Name() string
	// payloadType names the payload's Go type.
	payloadType() string
	// checkPayload decodes raw as Receive would and returns its error.
	checkPayload(raw json.RawMessage) error
}

var _ SignalDecl = Signal[int]{}

func (s Signal[T]) payloadType() string { return reflect.TypeFor[T]().String() }

func (s Signal[T]) checkPayload(raw json.RawMessage) error {
	_, err := decodeValue[T](raw)
	return err
}

// WithSignals declares the signals the workflow receives. A workflow that
// declares signals is sent only those: the engine refuses any other name
// (*UnknownSignalError, HTTP 404 unknown_signal) and a payload that does
// not decode into the signal's type, with the very decoding Receive uses
// (*PayloadError, HTTP 422 invalid_payload); a refused signal appends
// nothing. A keyed retry of a delivered signal is answered as a
// duplicate before any check. A workflow that declares no signals accepts
// every name and payload. Declaring one name twice fails registration.
func (w *Workflow[In, Out]) WithSignals(sigs ...SignalDecl) *Workflow[In, Out] {
	w.signals = append(w.signals, sigs...)
	return w
}

// signalTable indexes the declared signals by name; nil when none are
// declared.
func signalTable(workflow string, sigs []SignalDecl) (map[string]SignalDecl, error) {
	if len(sigs) == 0 {
		return nil, nil
	}
	table := make(map[string]SignalDecl, len(sigs))
	for _, s := range sigs {
		if _, dup := table[s.Name()]; dup || s.Name() == "" {
			return nil, fmt.Errorf("workflow %s: signal %q declared twice or without a name", workflow, s.Name())
		}
		table[s.Name()] = s
	}
	return table, nil
}

// ValidateSignal checks a signal sent to a run of workflow against the
// workflow's declared signals: an undeclared name is an
// *UnknownSignalError, a payload that does not decode into the signal's
// type a *PayloadError. It accepts everything when the workflow declares
// no signals or is not registered.
func (r *Registry) ValidateSignal(workflow, signal string, payload json.RawMessage) error {
	def, ok := r.workflow(workflow)
	if !ok || def.signals == nil || IsSystemSignal(signal) {
		return nil
	}
	decl, ok := def.signals[signal]
	if !ok {
		return &UnknownSignalError{Workflow: workflow, Signal: signal, Declared: declaredNames(def.signals)}
	}
	if err := decl.checkPayload(payload); err != nil {
		return &PayloadError{Workflow: workflow, Signal: signal, Type: decl.payloadType(), Err: err}
	}
	return nil
}

func declaredNames(table map[string]SignalDecl) []string {
	names := make([]string, 0, len(table))
	for n := range table {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// UnknownSignalError is a signal that the run's workflow does not declare.
type UnknownSignalError struct {
	Workflow string
	Signal   string
	// Declared lists the workflow's signals, sorted.
	Declared []string
}

func (e *UnknownSignalError) Error() string {
	return fmt.Sprintf("workflow %s declares no signal %q (declared: %s)", e.Workflow, e.Signal, strings.Join(e.Declared, ", "))
}

// Is makes errors.Is(err, ErrUnknownSignal) true.
func (e *UnknownSignalError) Is(target error) bool { return target == ErrUnknownSignal }

// PayloadError is a signal payload that does not decode into the declared
// signal's type.
type PayloadError struct {
	Workflow string
	Signal   string
	// Type is the Go type of the signal's payload.
	Type string
	// Err is the decoding error.
	Err error
}

func (e *PayloadError) Error() string {
	return fmt.Sprintf("payload of signal %q of workflow %s does not decode into %s: %v", e.Signal, e.Workflow, e.Type, e.Err)
}

// Is makes errors.Is(err, ErrInvalidPayload) true.
func (e *PayloadError) Is(target error) bool { return target == ErrInvalidPayload }

// Unwrap returns the decoding error.
func (e *PayloadError) Unwrap() error { return e.Err }

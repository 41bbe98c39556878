package harvest

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
)

// Continue-as-new.
//
// A workflow that would otherwise grow an endless history (a subscription,
// a counter, a poller) ends its run with
//
//	return Out{}, harvest.ContinueAsNew(ctx, next)
//
// The run closes CONTINUED_AS_NEW and, in the same transaction, a new run
// of the same workflow name and id starts on the same shard with input
// next and an empty history: it holds the workflow id from then on, and
// its activities get keys of their own (they derive from its execution
// id). The runs of one workflow id linked this way are a chain, named by
// its first run (WorkflowInfo.ChainID). Signals the run received but did
// not consume, and a cancel request it did not act on, are delivered to
// the new run first, signal keys included; a signal, cancel or terminate
// sent to an earlier run's id reaches the chain's current run, and signal
// keys deduplicate across the whole chain. The execution timeout spans
// the chain; the run timeout applies to each run.

// ContinueAsNewSuggestedLength is the soft cap on a run's history:
// ShouldContinueAsNew reports true from this many events on. The engine
// enforces no limit, but every workflow task of a run replays its whole
// history, so a long-lived workflow should continue as new well before
// its history reaches tens of thousands of events.
const ContinueAsNewSuggestedLength = 10_000

// ShouldContinueAsNew reports whether the run's history has reached
// ContinueAsNewSuggestedLength events (WorkflowInfo.HistoryLength). It
// answers the same on every replay.
func ShouldContinueAsNew(ctx Context) bool {
	return ctx.Info().HistoryLength >= ContinueAsNewSuggestedLength
}

// ContinueAsNewError is what ContinueAsNew returns: the workflow function
// returns it to end its run and start the next run of its chain. Any
// other use of it (wrapping it into another error keeps it) fails nothing
// but is pointless.
type ContinueAsNewError struct {
	// Input is the next run's input as JSON.
	Input json.RawMessage
	// inType is the Go type of the input, checked against the workflow's.
	inType reflect.Type
	err    error // encoding the input failed
}

func (e *ContinueAsNewError) Error() string { return "workflow continues as new" }

// ContinueAsNew returns the error that, returned by the workflow function,
// closes the run CONTINUED_AS_NEW and starts the next run of its chain
// with input in. in must have the workflow's input type: a run that
// continues with another type fails (error type "invalid_continue_as_new")
// instead. (*Workflow).ContinueAsNew checks the type when compiling.
func ContinueAsNew[In any](ctx Context, in In) error {
	raw, err := encodeValue(in)
	return &ContinueAsNewError{Input: raw, inType: reflect.TypeFor[In](), err: err}
}

// ContinueAsNew is harvest.ContinueAsNew typed to the workflow's input.
func (w *Workflow[In, Out]) ContinueAsNew(ctx Context, in In) error {
	return ContinueAsNew(ctx, in)
}

// checkContinueAsNew turns a continue-as-new of the wrong input type, or
// of an input that did not encode, into the run's failure.
func checkContinueAsNew[In any](workflow string, err error) error {
	can, ok := asContinueAsNew(err)
	switch {
	case !ok:
		return err
	case can.err != nil:
		return NewNonRetryableError("invalid_continue_as_new", fmt.Sprintf("encode the next input of workflow %s: %v", workflow, can.err))
	case can.inType != reflect.TypeFor[In]():
		return NewNonRetryableError("invalid_continue_as_new", fmt.Sprintf(
			"workflow %s continues as new with a %s input, its input is %s", workflow, can.inType, reflect.TypeFor[In]()))
	}
	return err
}

func asContinueAsNew(err error) (*ContinueAsNewError, bool) {
	return errors.AsType[*ContinueAsNewError](err)
}

// continueAsNew issues the run's close: the next input, the signals its
// code did not consume (updates waiting for their handlers among them)
// and a cancel request it did not act on. Updates whose handlers still
// run are answered first, with an error.
func (s *runState) continueAsNew(can *ContinueAsNewError) {
	s.abandonUpdates()
	s.issue(EventWorkflowContinuedAsNew, "", "", args{}, func() any {
		return WorkflowContinuedAsNewData{Input: can.Input, CarriedSignals: s.unconsumedSignals(),
			CancelRequested: s.pendingCancel()}
	})
}

// unconsumedSignals are the signals delivered to the code and not
// received, then those recorded but not delivered yet, in arrival order.
func (s *runState) unconsumedSignals() []SignalReceivedData {
	var left []arrival
	for _, q := range s.signals {
		left = append(left, q...)
	}
	sort.Slice(left, func(i, j int) bool { return left[i].seq < left[j].seq })
	var out []SignalReceivedData
	for _, a := range left {
		out = append(out, SignalReceivedData{SignalName: a.name, Payload: a.payload, IdempotencyKey: a.key})
	}
	for _, ev := range s.rest {
		if ev.Type != EventSignalReceived {
			continue
		}
		var d SignalReceivedData
		if err := json.Unmarshal(ev.Data, &d); err == nil {
			out = append(out, d)
		}
	}
	return out
}

// pendingCancel is the run's cancel request, delivered or not, if any.
func (s *runState) pendingCancel() *WorkflowCancelRequestedData {
	if s.cancel.requested {
		return &WorkflowCancelRequestedData{Reason: s.cancel.reason}
	}
	for _, ev := range s.rest {
		if ev.Type == EventWorkflowCancelRequested {
			var d WorkflowCancelRequestedData
			_ = json.Unmarshal(ev.Data, &d)
			return &d
		}
	}
	return nil
}

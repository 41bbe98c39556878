package harvest

import (
	"encoding/json"
	"time"
)

// EventType names a history event. The names are part of the HTTP contract
// (history responses) and of the stored data: never rename one.
type EventType string

// History event types.
const (
	EventWorkflowStarted    EventType = "WorkflowStarted"
	EventWorkflowCompleted  EventType = "WorkflowCompleted"
	EventWorkflowFailed     EventType = "WorkflowFailed"
	EventWorkflowCancelled  EventType = "WorkflowCancelled"
	EventWorkflowTerminated EventType = "WorkflowTerminated"
	EventActivityScheduled  EventType = "ActivityScheduled"
	EventActivityCompleted  EventType = "ActivityCompleted"
	EventActivityFailed     EventType = "ActivityFailed"
	EventActivityTimedOut   EventType = "ActivityTimedOut"
	EventTimerStarted       EventType = "TimerStarted"
	EventTimerFired         EventType = "TimerFired"
	EventSignalReceived     EventType = "SignalReceived"
	EventMarkerRecorded     EventType = "MarkerRecorded"
	// EventUpdateCompleted is an update handler's result (update.go).
	EventUpdateCompleted EventType = "UpdateCompleted"
	// EventWorkflowCancelRequested is a cancel request, delivered to the
	// code like a signal; the run stays open until the code returns.
	EventWorkflowCancelRequested EventType = "WorkflowCancelRequested"
	// EventWorkflowTimedOut closes a run whose execution or run timeout
	// passed.
	EventWorkflowTimedOut EventType = "WorkflowTimedOut"
	// EventTimerCanceled is a timer the code cancelled (a WithCancel
	// scope); the timer never fires.
	EventTimerCanceled EventType = "TimerCanceled"
	// EventActivityCancelRequested is an activity the code cancelled; its
	// future failed at once, its later result is ignored.
	EventActivityCancelRequested EventType = "ActivityCancelRequested"
	// EventWorkflowContinuedAsNew closes a run that continued as new
	// (ContinueAsNew): its successor, a new run of the same workflow id,
	// was created in the same transaction.
	EventWorkflowContinuedAsNew EventType = "WorkflowContinuedAsNew"
)

// IsCommand reports whether events of this type are produced by workflow
// code (and therefore matched on replay) rather than delivered to it.
func (t EventType) IsCommand() bool {
	switch t {
	case EventActivityScheduled, EventTimerStarted, EventMarkerRecorded,
		EventWorkflowCompleted, EventWorkflowFailed, EventWorkflowContinuedAsNew,
		EventTimerCanceled, EventActivityCancelRequested,
		EventSignalExternalInitiated, EventChildWorkflowInitiated, EventUpdateCompleted:
		return true
	}
	return false
}

// IsTerminal reports whether the event closes the run.
func (t EventType) IsTerminal() bool {
	switch t {
	case EventWorkflowCompleted, EventWorkflowFailed, EventWorkflowCancelled, EventWorkflowTerminated, EventWorkflowTimedOut,
		EventWorkflowContinuedAsNew:
		return true
	}
	return false
}

// Event is one recorded history event. EventID is dense from 0 per execution.
type Event struct {
	EventID   int64           `json:"event_id"`
	Type      EventType       `json:"type"`
	Timestamp time.Time       `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

// Command is an event produced by a workflow task, not yet appended.
type Command struct {
	Type EventType
	Data json.RawMessage
	// Payload is the value Data encodes (a *Data struct of this package,
	// by value) when the command was made in this process, so that the
	// engine need not decode Data again; nil when only Data is known.
	// Decoding Data must give Payload back (ActivityOptions.Stored keeps
	// activity options to what their JSON holds).
	Payload any
}

// WorkflowStartedData is the payload of WorkflowStarted.
type WorkflowStartedData struct {
	WorkflowName   string          `json:"workflow_name"`
	WorkflowID     string          `json:"workflow_id"`
	Input          json.RawMessage `json:"input"`
	Queue          string          `json:"queue,omitempty"`
	IdempotencyKey string          `json:"idempotency_key,omitempty"`
	// ContinuedFrom is the run this one continues (continue-as-new), and
	// ChainID the first run of their chain; both empty on a first run.
	ContinuedFrom string `json:"continued_from,omitempty"`
	ChainID       string `json:"chain_id,omitempty"`
	// KeyBase is the run the keys of a reset run derive from (the
	// activity, child start and external signal keys): the first run of
	// its reset line, so that a reset run issues the keys the run it
	// replays issued. Empty on any other run: its own execution id.
	KeyBase string `json:"key_base,omitempty"`
	// ResetFrom is the run a reset run replays the history of, and
	// ResetEventID the last event it copied (see the engine's Reset).
	ResetFrom    string `json:"reset_from,omitempty"`
	ResetEventID int64  `json:"reset_event_id,omitempty"`
}

// WorkflowCompletedData is the payload of WorkflowCompleted.
type WorkflowCompletedData struct {
	Output json.RawMessage `json:"output"`
}

// WorkflowFailedData is the payload of WorkflowFailed.
type WorkflowFailedData struct {
	Error ErrorInfo `json:"error"`
}

// WorkflowContinuedAsNewData is the payload of WorkflowContinuedAsNew.
type WorkflowContinuedAsNewData struct {
	// Input is the new run's input.
	Input json.RawMessage `json:"input"`
	// NewExecutionID is the new run, filled in by the engine when it
	// appends the event.
	NewExecutionID string `json:"new_execution_id,omitempty"`
	// CarriedSignals are the signals the run received but its code did
	// not consume, in arrival order, with their keys: the new run receives
	// them first.
	CarriedSignals []SignalReceivedData `json:"carried_signals,omitempty"`
	// CancelRequested carries a cancel request the run had received: the
	// new run receives it too.
	CancelRequested *WorkflowCancelRequestedData `json:"cancel_requested,omitempty"`
}

// WorkflowClosedData is the payload of WorkflowCancelled and WorkflowTerminated.
type WorkflowClosedData struct {
	Reason string `json:"reason,omitempty"`
	// ReplacedBy is set when a start with a terminating policy replaced the run.
	ReplacedBy string `json:"replaced_by,omitempty"`
}

// WorkflowCancelRequestedData is the payload of WorkflowCancelRequested.
type WorkflowCancelRequestedData struct {
	Reason string `json:"reason,omitempty"`
}

// WorkflowTimedOutData is the payload of WorkflowTimedOut.
type WorkflowTimedOutData struct {
	// TimeoutType is "execution" or "run".
	TimeoutType string    `json:"timeout_type"`
	Error       ErrorInfo `json:"error"`
}

// ActivityScheduledData is the payload of ActivityScheduled. The
// idempotency key is recorded so operators can find it.
type ActivityScheduledData struct {
	ActivityID     string          `json:"activity_id"`
	Name           string          `json:"name"`
	Input          json.RawMessage `json:"input"`
	Queue          string          `json:"queue,omitempty"`
	IdempotencyKey string          `json:"idempotency_key"`
	Options        ActivityOptions `json:"options"`
	// Digest is the digest of name, input and options (digest.go); empty
	// in histories written before digests.
	Digest string `json:"digest,omitempty"`
}

// ActivityCompletedData is the payload of ActivityCompleted.
type ActivityCompletedData struct {
	ActivityID string          `json:"activity_id"`
	Output     json.RawMessage `json:"output"`
	Attempt    int             `json:"attempt"`
	Slot       *ActivitySlot   `json:"slot,omitempty"`
}

// ActivitySlot is the concurrency slot an activity's attempt held, for
// an activity under a concurrency limit (Activity.WithConcurrency): its
// key, when the attempt's task took it (an attempt tried again after its
// node died keeps its task's slot) and a moment before it was given back,
// in the transaction that recorded the outcome; both by the database's
// clock.
type ActivitySlot struct {
	Key   string    `json:"key"`
	Since time.Time `json:"since"`
	Until time.Time `json:"until"`
}

// ActivityFailedData is the payload of ActivityFailed (a final failure).
type ActivityFailedData struct {
	ActivityID string        `json:"activity_id"`
	Error      ErrorInfo     `json:"error"`
	Attempt    int           `json:"attempt"`
	Slot       *ActivitySlot `json:"slot,omitempty"`
}

// ActivityTimedOutData is the payload of ActivityTimedOut.
type ActivityTimedOutData struct {
	ActivityID  string        `json:"activity_id"`
	TimeoutType string        `json:"timeout_type"`
	Attempt     int           `json:"attempt"`
	Slot        *ActivitySlot `json:"slot,omitempty"`
}

// TimerStartedData is the payload of TimerStarted. FireAt is filled in by
// the engine from the database clock when the command is appended.
type TimerStartedData struct {
	TimerID    string     `json:"timer_id"`
	DurationMS int64      `json:"duration_ms"`
	FireAt     *time.Time `json:"fire_at,omitempty"`
	// Digest is the digest of the duration (digest.go).
	Digest string `json:"digest,omitempty"`
}

// TimerFiredData is the payload of TimerFired.
type TimerFiredData struct {
	TimerID string `json:"timer_id"`
}

// TimerCanceledData is the payload of TimerCanceled.
type TimerCanceledData struct {
	TimerID string `json:"timer_id"`
}

// ActivityCancelRequestedData is the payload of ActivityCancelRequested.
type ActivityCancelRequestedData struct {
	ActivityID string `json:"activity_id"`
}

// SignalReceivedData is the payload of SignalReceived.
type SignalReceivedData struct {
	SignalName     string          `json:"signal_name"`
	Payload        json.RawMessage `json:"payload"`
	IdempotencyKey string          `json:"idempotency_key,omitempty"`
}

// MarkerRecordedData is the payload of MarkerRecorded (side effects).
type MarkerRecordedData struct {
	Name     string          `json:"name"`
	MarkerID string          `json:"marker_id"`
	Details  json.RawMessage `json:"details"`
	// Digest is the digest of the name (and a version marker's change id).
	Digest string `json:"digest,omitempty"`
}

// NewCommand encodes a payload into a command.
func NewCommand(t EventType, data any) Command {
	return Command{Type: t, Data: mustJSON(data), Payload: data}
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		// Payload structs of this package always encode; user values are
		// encoded by encodeValue, which returns errors instead.
		panic("harvest: encode history payload: " + err.Error())
	}
	return b
}

func encodeValue(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return b, nil
}

func decodeValue[T any](raw json.RawMessage) (T, error) {
	var v T
	if len(raw) == 0 {
		return v, nil
	}
	err := json.Unmarshal(raw, &v)
	return v, err
}

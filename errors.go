package harvest

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Sentinel errors of the SDK.
var (
	// ErrUpdateRejected is the error of an update its validator refused
	// (an *UpdateRejectedError).
	ErrUpdateRejected = errors.New("update rejected")
	// ErrUnknownUpdate: the run's code registered no handler under the
	// update's name (at its current point).
	ErrUnknownUpdate = errors.New("unknown update")
	// ErrUpdateArgs: the update's arguments do not decode into its
	// handler's argument type.
	ErrUpdateArgs = errors.New("update arguments do not decode")
	// errUpdateGone is the error an update gets when its run continued as
	// new while its handler ran.
	errUpdateGone = errors.New("the run continued as new while the update's handler ran")
	// ErrUnknownWorkflow is returned when no workflow is registered under a name.
	ErrUnknownWorkflow = errors.New("unknown workflow")
	// ErrUnknownActivity is returned when no activity is registered under a name.
	ErrUnknownActivity = errors.New("unknown activity")
	// ErrDuplicateName is returned when a name is registered twice.
	ErrDuplicateName = errors.New("name already registered")
	// ErrNonDeterminism matches every NonDeterminismError.
	ErrNonDeterminism = errors.New("non-determinism")
	// ErrWorkflowPanic matches every PanicError.
	ErrWorkflowPanic = errors.New("workflow panicked")
	// ErrUnknownSignal matches every *UnknownSignalError.
	ErrUnknownSignal = errors.New("signal not declared by the workflow")
	// ErrInvalidPayload matches every *PayloadError.
	ErrInvalidPayload = errors.New("signal payload does not decode into its type")
	// ErrCanceled matches every *CanceledError: the run was asked to cancel.
	ErrCanceled = errors.New("workflow canceled")
	// ErrChildWorkflow matches every *ChildWorkflowError: a child did
	// not complete.
	ErrChildWorkflow = errors.New("child workflow did not complete")
	// ErrExternalSignal matches every *ExternalSignalError: a signal to
	// another run was refused.
	ErrExternalSignal = errors.New("signal to another workflow refused")
	// ErrNoWorkflowStarted is returned when a history to replay does not
	// start with WorkflowStarted.
	ErrNoWorkflowStarted = errors.New("history does not start with WorkflowStarted")
	// ErrResultPending, returned (or wrapped) by an activity, says "I will
	// finish later": the attempt stays open for the remote side that holds
	// its task token (ActivityContext.TaskToken) to complete, fail or
	// heartbeat it over POST /api/harvest/activities/complete|fail|heartbeat.
	// Its start-to-close, schedule-to-close and heartbeat timeouts apply.
	ErrResultPending = errors.New("activity result pending: completed later with its task token")
	// ErrPartialHistory is returned for a history file that holds one page
	// of a longer history (its next_cursor is set): fetch it with --all.
	ErrPartialHistory = errors.New("history file holds one page of the history (next_cursor is set): fetch every page with harvestctl workflow history --all")
	// ErrPointer matches every malformed JSON pointer (ParsePointer).
	ErrPointer = errors.New("malformed JSON pointer")
)

// ErrorInfo is the wire form of a failure as recorded in history.
type ErrorInfo struct {
	Message      string          `json:"message"`
	Type         string          `json:"type,omitempty"`
	NonRetryable bool            `json:"non_retryable,omitempty"`
	Details      json.RawMessage `json:"details,omitempty"`
	// NextRetryDelayMS, when positive, replaces the retry policy's backoff
	// before the next attempt (ApplicationError.NextRetryDelay).
	NextRetryDelayMS int64 `json:"next_retry_delay_ms,omitempty"`
}

// ApplicationError is an error raised by user code with a type that retry
// policies can match and an explicit retryability.
type ApplicationError struct {
	Type         string
	Message      string
	NonRetryable bool
	Details      json.RawMessage
	// NextRetryDelay, when positive, is the pause before the next attempt
	// instead of the retry policy's backoff (an HTTP answer's Retry-After,
	// say). The policy's attempts and schedule-to-close still bound it.
	NextRetryDelay time.Duration
}

// NewApplicationError returns a retryable error of the given type.
func NewApplicationError(typ, msg string) *ApplicationError {
	return &ApplicationError{Type: typ, Message: msg}
}

// NewNonRetryableError returns an error that stops activity retries at once.
func NewNonRetryableError(typ, msg string) *ApplicationError {
	return &ApplicationError{Type: typ, Message: msg, NonRetryable: true}
}

func (e *ApplicationError) Error() string {
	if e.Type == "" {
		return e.Message
	}
	return e.Type + ": " + e.Message
}

// ActivityError is what Future.Get returns when an activity failed for good
// (retries exhausted, non-retryable error or timeout).
type ActivityError struct {
	ActivityID   string
	ActivityName string
	// TimeoutType is set ("start_to_close", "schedule_to_close",
	// "heartbeat") when the activity timed out.
	TimeoutType string
	Info        ErrorInfo
}

func (e *ActivityError) Error() string {
	if e.TimeoutType != "" {
		return fmt.Sprintf("activity %s (%s) timed out: %s", e.ActivityName, e.ActivityID, e.TimeoutType)
	}
	return fmt.Sprintf("activity %s (%s) failed: %s", e.ActivityName, e.ActivityID, e.Info.Message)
}

// NonDeterminismError reports workflow code that no longer matches its
// recorded history.
type NonDeterminismError struct {
	EventID int64
	Message string
}

func (e *NonDeterminismError) Error() string {
	if e.EventID < 0 {
		return "non-determinism: " + e.Message
	}
	return fmt.Sprintf("non-determinism at event %d: %s", e.EventID, e.Message)
}

// Is makes errors.Is(err, ErrNonDeterminism) true.
func (e *NonDeterminismError) Is(target error) bool { return target == ErrNonDeterminism }

// PanicError reports a panic inside workflow code. It fails the workflow
// task, not the workflow: the task is retried and the history is untouched.
type PanicError struct {
	Value string
	Stack string
}

func (e *PanicError) Error() string { return "workflow panicked: " + e.Value }

// Is makes errors.Is(err, ErrWorkflowPanic) true.
func (e *PanicError) Is(target error) bool { return target == ErrWorkflowPanic }

// ToErrorInfo converts any error into its wire form. ApplicationError keeps
// its type and retryability; other errors get their Go type as Type.
func ToErrorInfo(err error) ErrorInfo {
	var app *ApplicationError
	if errors.As(err, &app) {
		return ErrorInfo{Message: app.Message, Type: app.Type, NonRetryable: app.NonRetryable, Details: app.Details,
			NextRetryDelayMS: app.NextRetryDelay.Milliseconds()}
	}
	if errors.Is(err, ErrCanceled) {
		return ErrorInfo{Message: err.Error(), Type: "canceled"}
	}
	var act *ActivityError
	if errors.As(err, &act) {
		info := act.Info
		if info.Message == "" {
			info.Message = act.Error()
		}
		return info
	}
	return ErrorInfo{Message: err.Error(), Type: fmt.Sprintf("%T", err)}
}

// FromErrorInfo turns a recorded failure back into an *ApplicationError.
func FromErrorInfo(info ErrorInfo) *ApplicationError {
	return &ApplicationError{Type: info.Type, Message: info.Message, NonRetryable: info.NonRetryable, Details: info.Details,
		NextRetryDelay: time.Duration(info.NextRetryDelayMS) * time.Millisecond}
}

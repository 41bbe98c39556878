package harvest

import (
	"encoding/json"
	"strings"
)

// History events of commands that act on other runs: signals to other
// workflows (SignalExternal) and child workflows (Workflow.Execute). The
// command event records the intent in the workflow task's transaction;
// the engine's outbox then performs a keyed signal or keyed start and
// appends the outcome event. Each carries the command id the code issued
// it under (the activity/timer numbering).
const (
	// EventSignalExternalInitiated is a command: signal another run.
	EventSignalExternalInitiated EventType = "SignalExternalInitiated"
	// EventExternalSignalDelivered: the target recorded the signal (or
	// had it already, under the same key).
	EventExternalSignalDelivered EventType = "ExternalSignalDelivered"
	// EventExternalSignalFailed: the target refused it for good (not
	// found, closed, undeclared signal, bad payload).
	EventExternalSignalFailed EventType = "ExternalSignalFailed"
	// EventChildWorkflowInitiated is a command: start a child run.
	EventChildWorkflowInitiated EventType = "ChildWorkflowInitiated"
	// EventChildWorkflowStarted: the keyed start answered with the
	// child's execution id.
	EventChildWorkflowStarted EventType = "ChildWorkflowStarted"
	// EventChildWorkflowStartFailed: the start was refused for good
	// (workflow id held by another run, unknown workflow, bad input).
	EventChildWorkflowStartFailed EventType = "ChildWorkflowStartFailed"
)

// ChildClosedSignal is the system signal a child's close reaches its
// parent as (a SignalReceived keyed ChildDoneKey, payload
// ChildClosedData). Clients cannot send it: signal names and keys with
// the reserved prefix "hv:" are refused from them.
const ChildClosedSignal = "hv:child_closed"

// FlowGrantSignal is the system signal by which the keeper of a
// concurrency key counted across the cluster gives a QUEUED run its slot:
// the engine makes the run RUNNING in the signal's transaction
// (ConcurrencyLimit.Scope).
const FlowGrantSignal = "hv:flow_grant"

// ReservedPrefix starts the idempotency keys and signal names Harvest
// makes itself.
const ReservedPrefix = "hv:"

// IsSystemSignal reports whether name is one only Harvest sends.
func IsSystemSignal(name string) bool { return strings.HasPrefix(name, ReservedPrefix) }

// SystemWorkflowPrefix starts the names of the workflows Harvest runs
// itself (the keeper of a limit counted across the cluster): only Harvest
// starts them, and they are neither cancelled nor terminated by hand.
const SystemWorkflowPrefix = "hv."

// IsSystemWorkflow reports whether name is a workflow only Harvest starts.
func IsSystemWorkflow(name string) bool { return strings.HasPrefix(name, SystemWorkflowPrefix) }

// ExternalSignalKey is the signal idempotency key of command commandID of
// run executionID: every attempt and replay of one send carries it.
func ExternalSignalKey(executionID, commandID string) string {
	return "hv:sig:" + executionID + ":" + commandID
}

// ChildStartKey is the start idempotency key of child command commandID
// of parent run executionID.
func ChildStartKey(executionID, commandID string) string {
	return "hv:child:" + executionID + ":" + commandID
}

// ChildDoneKey is the signal idempotency key of the close of child run
// childExecutionID (the first run of its continue-as-new chain) reported
// to its parent.
func ChildDoneKey(childExecutionID string) string { return "hv:childdone:" + childExecutionID }

// ParseChildStartKey returns the parent execution id and command id of a
// ChildStartKey; ok is false for any other key.
func ParseChildStartKey(key string) (parent, commandID string, ok bool) {
	rest, ok := strings.CutPrefix(key, "hv:child:")
	if !ok {
		return "", "", false
	}
	parent, commandID, ok = strings.Cut(rest, ":")
	return parent, commandID, ok && parent != "" && commandID != ""
}

// SignalExternalInitiatedData is the payload of SignalExternalInitiated.
// The target is a run (ExecutionID, from SignalExternal) or a workflow id
// (WorkflowName and WorkflowID, from SignalExternalWorkflow; ExecutionID
// is empty then): the engine resolves it once to the id's running run.
type SignalExternalInitiatedData struct {
	CommandID      string          `json:"command_id"`
	ExecutionID    string          `json:"execution_id"`
	WorkflowName   string          `json:"workflow_name,omitempty"`
	WorkflowID     string          `json:"workflow_id,omitempty"`
	SignalName     string          `json:"signal_name"`
	Payload        json.RawMessage `json:"payload"`
	IdempotencyKey string          `json:"idempotency_key"`
	Digest         string          `json:"digest,omitempty"`
}

// ExternalSignalDeliveredData is the payload of ExternalSignalDelivered.
// ExecutionID is the run signalled (for a workflow id target, the run it
// resolved to).
type ExternalSignalDeliveredData struct {
	CommandID   string `json:"command_id"`
	ExecutionID string `json:"execution_id"`
	// Delivered is false when the target had the key already (a retry).
	Delivered bool `json:"delivered"`
}

// OutboxFailedData is the payload of ExternalSignalFailed and
// ChildWorkflowStartFailed.
type OutboxFailedData struct {
	CommandID string    `json:"command_id"`
	Error     ErrorInfo `json:"error"`
	// ExecutionID is the run a workflow id target resolved to, when that
	// run refused the signal (ExternalSignalFailed only).
	ExecutionID string `json:"execution_id,omitempty"`
}

// ChildWorkflowInitiatedData is the payload of ChildWorkflowInitiated.
type ChildWorkflowInitiatedData struct {
	CommandID          string          `json:"command_id"`
	WorkflowName       string          `json:"workflow_name"`
	WorkflowID         string          `json:"workflow_id"`
	Input              json.RawMessage `json:"input"`
	ParentClosePolicy  string          `json:"parent_close_policy"`
	ExecutionTimeoutMS int64           `json:"execution_timeout_ms,omitempty"`
	RunTimeoutMS       int64           `json:"run_timeout_ms,omitempty"`
	IdempotencyKey     string          `json:"idempotency_key"`
	Digest             string          `json:"digest,omitempty"`
	// The child's flow control fields (ChildOptions).
	ConcurrencyKey string `json:"concurrency_key,omitempty"`
	Priority       int    `json:"priority,omitempty"`
	FairnessKey    string `json:"fairness_key,omitempty"`
	FairnessWeight int    `json:"fairness_weight,omitempty"`
}

// ChildWorkflowStartedData is the payload of ChildWorkflowStarted.
type ChildWorkflowStartedData struct {
	CommandID   string `json:"command_id"`
	ExecutionID string `json:"execution_id"`
	WorkflowID  string `json:"workflow_id"`
}

// ChildClosedData is the payload of the ChildClosedSignal: the child's
// final state, its output or error.
type ChildClosedData struct {
	CommandID   string          `json:"command_id"`
	ExecutionID string          `json:"execution_id"`
	State       string          `json:"state"`
	Output      json.RawMessage `json:"output,omitempty"`
	Error       *ErrorInfo      `json:"error,omitempty"`
}

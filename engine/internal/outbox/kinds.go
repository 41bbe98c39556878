package outbox

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/runs"
	"github.com/harvestd/harvest/engine/internal/store"
	"github.com/harvestd/harvest/engine/shardapi"
)

// childDoneRequest is the request of a ChildDone row: the parent to tell
// and the child's outcome (the row's execution is the child).
type childDoneRequest struct {
	Parent    string `json:"parent"`
	CommandID string `json:"command_id"`
	// Chain is the child's continue-as-new chain (its first run, the
	// execution id the parent knows): the report's key.
	Chain  string          `json:"chain"`
	State  string          `json:"state"`
	Output json.RawMessage `json:"output"`
	Error  json.RawMessage `json:"error"`
}

// closeChildRequest is the request of a CloseChild row.
type closeChildRequest struct {
	ExecutionID string `json:"execution_id"`
	Policy      string `json:"policy"`
}

// Route adds the outbox row (and, for a child, its children row) of a
// command that acts on another run: the runs.Router of workflow tasks.
func Route(ch *runs.Changes, ex *store.Exec, c harvest.Command) error {
	switch c.Type {
	case harvest.EventSignalExternalInitiated:
		d, err := runs.Payload[harvest.SignalExternalInitiatedData](c)
		if err != nil {
			return fmt.Errorf("decode SignalExternalInitiated: %w", err)
		}
		return ch.Outbox.Add(ex.ID, d.CommandID, Signal, d)
	case harvest.EventChildWorkflowInitiated:
		d, err := runs.Payload[harvest.ChildWorkflowInitiatedData](c)
		if err != nil {
			return fmt.Errorf("decode ChildWorkflowInitiated: %w", err)
		}
		ch.Children.Add(ex.ID, d.CommandID, d.WorkflowName, d.WorkflowID, d.ParentClosePolicy)
		return ch.Outbox.Add(ex.ID, d.CommandID, StartChild, d)
	}
	return nil
}

var _ runs.Router = Route

func decodeRequest[T any](r store.OutboxRow) (T, error) {
	var v T
	if err := json.Unmarshal(r.Request, &v); err != nil {
		return v, fmt.Errorf("outbox row %d: %w: %w", r.ID, shardapi.ErrInvalidArgument, err)
	}
	return v, nil
}

func parseTarget(s string) (uuid.UUID, error) {
	id, err := uuid.Parse(s)
	if err != nil {
		return uuid.Nil, fmt.Errorf("execution id %q is not a UUID: %w", s, shardapi.ErrInvalidArgument)
	}
	return id, nil
}

// performSignal sends a SignalExternal command's keyed signal, to its
// run or to the run its workflow id resolved to (resolve.go).
func performSignal(ctx context.Context, d Deps, r store.OutboxRow) (*harvest.Command, error) {
	req, err := decodeRequest[signalRow](r)
	if err != nil {
		return failedOutcome(harvest.EventExternalSignalFailed, r.CommandID, err), err
	}
	target, err := signalTarget(ctx, d, r, req)
	if err != nil {
		return failedOutcome(harvest.EventExternalSignalFailed, r.CommandID, err), err
	}
	res, err := d.Outbound.Signal(ctx, shardapi.SignalRequest{ExecutionID: target, SignalName: req.SignalName,
		Payload: req.Payload, IdempotencyKey: req.IdempotencyKey})
	if err != nil {
		c := harvest.NewCommand(harvest.EventExternalSignalFailed, harvest.OutboxFailedData{CommandID: r.CommandID,
			Error: errorInfo(err), ExecutionID: resolvedID(req, target)})
		return &c, err
	}
	c := harvest.NewCommand(harvest.EventExternalSignalDelivered, harvest.ExternalSignalDeliveredData{
		CommandID: req.CommandID, ExecutionID: target.String(), Delivered: res.Delivered})
	return &c, nil
}

// resolvedID is the run a workflow id target resolved to ("" for an
// execution id target, which its command names already).
func resolvedID(d signalRow, target uuid.UUID) string {
	if d.WorkflowID == "" {
		return ""
	}
	return target.String()
}

// performStartChild performs a child's keyed start.
func performStartChild(ctx context.Context, d Deps, r store.OutboxRow) (*harvest.Command, error) {
	c, err := decodeRequest[harvest.ChildWorkflowInitiatedData](r)
	if err != nil {
		return failedOutcome(harvest.EventChildWorkflowStartFailed, r.CommandID, err), err
	}
	// A workflow id held by another running run refuses the start: the
	// child must be a run of its own, which reports to this parent.
	req := shardapi.OutboundStart{WorkflowName: c.WorkflowName, WorkflowID: c.WorkflowID, Input: c.Input,
		IdempotencyKey: c.IdempotencyKey, ConflictPolicy: shardapi.ConflictFail,
		ExecutionTimeout: msPointer(c.ExecutionTimeoutMS), RunTimeout: msPointer(c.RunTimeoutMS),
		ConcurrencyKey: c.ConcurrencyKey, Priority: c.Priority, FairnessKey: c.FairnessKey, FairnessWeight: c.FairnessWeight}
	res, err := d.Outbound.Start(ctx, req)
	if err != nil {
		return failedOutcome(harvest.EventChildWorkflowStartFailed, r.CommandID, err), err
	}
	started := harvest.NewCommand(harvest.EventChildWorkflowStarted, harvest.ChildWorkflowStartedData{
		CommandID: c.CommandID, ExecutionID: res.ExecutionID.String(), WorkflowID: res.WorkflowID})
	return &started, nil
}

func msPointer(ms int64) *time.Duration {
	if ms <= 0 {
		return nil
	}
	d := time.Duration(ms) * time.Millisecond
	return &d
}

// performChildDone tells a closed child's parent, by a keyed system
// signal. A parent that is gone or closed has nothing left to learn.
func performChildDone(ctx context.Context, d Deps, r store.OutboxRow) error {
	req, err := decodeRequest[childDoneRequest](r)
	if err != nil {
		return err
	}
	parent, err := parseTarget(req.Parent)
	if err != nil {
		return err
	}
	raw, err := json.Marshal(childClosed(r, req))
	if err != nil {
		return fmt.Errorf("encode child close: %w", err)
	}
	_, err = d.Outbound.Signal(ctx, shardapi.SignalRequest{ExecutionID: parent, SignalName: harvest.ChildClosedSignal,
		Payload: raw, IdempotencyKey: harvest.ChildDoneKey(cmp.Or(req.Chain, r.ExecutionID.String()))})
	return err
}

// childClosed is the report a ChildDone row signals to the parent.
func childClosed(r store.OutboxRow, req childDoneRequest) harvest.ChildClosedData {
	closed := harvest.ChildClosedData{CommandID: req.CommandID, ExecutionID: r.ExecutionID.String(), State: req.State, Output: req.Output}
	if len(req.Error) > 0 && string(req.Error) != "null" {
		var info harvest.ErrorInfo
		if json.Unmarshal(req.Error, &info) == nil {
			closed.Error = &info
		}
	}
	return closed
}

// performCloseChild applies a parent close policy to one child.
func performCloseChild(ctx context.Context, d Deps, r store.OutboxRow) error {
	req, err := decodeRequest[closeChildRequest](r)
	if err != nil {
		return err
	}
	child, err := parseTarget(req.ExecutionID)
	if err != nil {
		return err
	}
	reason := "parent " + r.ExecutionID.String() + " closed (parent close policy " + req.Policy + ")"
	if req.Policy == string(harvest.ParentCloseRequestCancel) {
		_, err = d.Outbound.Cancel(ctx, child, reason)
		return err
	}
	_, err = d.Outbound.Terminate(ctx, child, reason)
	return err
}

// queueChildStart notes the child's start (or its refusal) in the
// parent's children row; a parent that closed before the start was
// answered gets its close policy applied now.
func queueChildStart(b *pgx.Batch, parent *store.Exec, a Answer) error {
	r := a.row
	if a.answer != nil {
		store.QueueChildStartError(b, r.ExecutionID, r.CommandID, a.answer.Error())
		return nil
	}
	d, err := runs.Payload[harvest.ChildWorkflowStartedData](*a.outcome)
	if err != nil {
		return fmt.Errorf("decode ChildWorkflowStarted: %w", err)
	}
	store.QueueChildStarted(b, r.ExecutionID, r.CommandID, d.ExecutionID)
	if parent != nil && shardapi.IsTerminal(parent.State) {
		store.QueueClosePolicyOutbox(b, []uuid.UUID{parent.ID})
	}
	return nil
}

// failedOutcome is the failure event of a command refused for good.
func failedOutcome(t harvest.EventType, commandID string, answer error) *harvest.Command {
	c := harvest.NewCommand(t, harvest.OutboxFailedData{CommandID: commandID, Error: errorInfo(answer)})
	return &c
}

// errorInfo is the recorded form of a definite refusal, typed by what
// refused it.
func errorInfo(err error) harvest.ErrorInfo {
	info := harvest.ErrorInfo{Message: err.Error(), Type: "refused", NonRetryable: true}
	var (
		terminal *shardapi.TerminalError
		conflict *shardapi.ConflictError
		refused  *shardapi.RefusedError
	)
	switch {
	case errors.As(err, &terminal):
		info.Type = "execution_terminal"
	case errors.As(err, &conflict):
		info.Type = "conflict"
	case errors.As(err, &refused):
		info.Type = refused.Code
	case errors.Is(err, shardapi.ErrNotFound):
		info.Type = "not_found"
	case errors.Is(err, shardapi.ErrUnknownWorkflow):
		info.Type = "unknown_workflow"
	case errors.Is(err, harvest.ErrUnknownSignal):
		info.Type = "unknown_signal"
	case errors.Is(err, harvest.ErrInvalidPayload):
		info.Type = "invalid_payload"
	}
	return info
}

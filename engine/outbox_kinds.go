package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/engine/internal/runs"
	"github.com/harvestd/harvest/engine/internal/store"
)

// childDoneRequest is the request of an outboxChildDone row: the parent
// to tell and the child's outcome (the row's execution is the child).
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

// closeChildRequest is the request of an outboxCloseChild row.
type closeChildRequest struct {
	ExecutionID string `json:"execution_id"`
	Policy      string `json:"policy"`
}

// queueOutboxCommand adds the outbox row (and, for a child, its children
// row) of a command that acts on another run.
// It is the runs.Router of workflow tasks.
func queueOutboxCommand(ch *runs.Changes, ex *store.Exec, c harvest.Command) error {
	switch c.Type {
	case harvest.EventSignalExternalInitiated:
		d, err := runs.Payload[harvest.SignalExternalInitiatedData](c)
		if err != nil {
			return fmt.Errorf("decode SignalExternalInitiated: %w", err)
		}
		return ch.Outbox.Add(ex.ID, d.CommandID, outboxSignal, d)
	case harvest.EventChildWorkflowInitiated:
		d, err := runs.Payload[harvest.ChildWorkflowInitiatedData](c)
		if err != nil {
			return fmt.Errorf("decode ChildWorkflowInitiated: %w", err)
		}
		ch.Children.Add(ex.ID, d.CommandID, d.WorkflowName, d.WorkflowID, d.ParentClosePolicy)
		return ch.Outbox.Add(ex.ID, d.CommandID, outboxStartChild, d)
	}
	return nil
}

func decodeRequest[T any](r store.OutboxRow) (T, error) {
	var v T
	if err := json.Unmarshal(r.Request, &v); err != nil {
		return v, fmt.Errorf("outbox row %d: %w: %w", r.ID, ErrInvalidArgument, err)
	}
	return v, nil
}

func parseTarget(s string) (uuid.UUID, error) {
	id, err := uuid.Parse(s)
	if err != nil {
		return uuid.Nil, fmt.Errorf("execution id %q is not a UUID: %w", s, ErrInvalidArgument)
	}
	return id, nil
}

// performSignal sends a SignalExternal command's keyed signal, to its
// run or to the run its workflow id resolved to (outbox_resolve.go).
func (e *Engine) performSignal(ctx context.Context, r store.OutboxRow) (*harvest.Command, error) {
	d, err := decodeRequest[signalRow](r)
	if err != nil {
		return failedOutcome(harvest.EventExternalSignalFailed, r.CommandID, err), err
	}
	target, err := e.signalTarget(ctx, r, d)
	if err != nil {
		return failedOutcome(harvest.EventExternalSignalFailed, r.CommandID, err), err
	}
	res, err := e.cfg.Outbound.Signal(ctx, SignalRequest{ExecutionID: target, SignalName: d.SignalName,
		Payload: d.Payload, IdempotencyKey: d.IdempotencyKey})
	if err != nil {
		c := harvest.NewCommand(harvest.EventExternalSignalFailed, harvest.OutboxFailedData{CommandID: r.CommandID,
			Error: outboxErrorInfo(err), ExecutionID: resolvedID(d, target)})
		return &c, err
	}
	c := harvest.NewCommand(harvest.EventExternalSignalDelivered, harvest.ExternalSignalDeliveredData{
		CommandID: d.CommandID, ExecutionID: target.String(), Delivered: res.Delivered})
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
func (e *Engine) performStartChild(ctx context.Context, r store.OutboxRow) (*harvest.Command, error) {
	d, err := decodeRequest[harvest.ChildWorkflowInitiatedData](r)
	if err != nil {
		return failedOutcome(harvest.EventChildWorkflowStartFailed, r.CommandID, err), err
	}
	// A workflow id held by another running run refuses the start: the
	// child must be a run of its own, which reports to this parent.
	req := StartRequest{WorkflowName: d.WorkflowName, WorkflowID: d.WorkflowID, Input: d.Input, IdempotencyKey: d.IdempotencyKey,
		ConflictPolicy: ConflictFail, ExecutionTimeout: msPointer(d.ExecutionTimeoutMS), RunTimeout: msPointer(d.RunTimeoutMS)}
	res, err := e.cfg.Outbound.Start(ctx, req)
	if err != nil {
		return failedOutcome(harvest.EventChildWorkflowStartFailed, r.CommandID, err), err
	}
	c := harvest.NewCommand(harvest.EventChildWorkflowStarted, harvest.ChildWorkflowStartedData{
		CommandID: d.CommandID, ExecutionID: res.ExecutionID.String(), WorkflowID: res.WorkflowID})
	return &c, nil
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
func (e *Engine) performChildDone(ctx context.Context, r store.OutboxRow) error {
	d, err := decodeRequest[childDoneRequest](r)
	if err != nil {
		return err
	}
	parent, err := parseTarget(d.Parent)
	if err != nil {
		return err
	}
	closed := harvest.ChildClosedData{CommandID: d.CommandID, ExecutionID: r.ExecutionID.String(), State: d.State, Output: d.Output}
	if len(d.Error) > 0 && string(d.Error) != "null" {
		var info harvest.ErrorInfo
		if json.Unmarshal(d.Error, &info) == nil {
			closed.Error = &info
		}
	}
	raw, err := json.Marshal(closed)
	if err != nil {
		return fmt.Errorf("encode child close: %w", err)
	}
	_, err = e.cfg.Outbound.Signal(ctx, SignalRequest{ExecutionID: parent, SignalName: harvest.ChildClosedSignal,
		Payload: raw, IdempotencyKey: harvest.ChildDoneKey(cmp.Or(d.Chain, r.ExecutionID.String()))})
	return err
}

// performCloseChild applies a parent close policy to one child.
func (e *Engine) performCloseChild(ctx context.Context, r store.OutboxRow) error {
	d, err := decodeRequest[closeChildRequest](r)
	if err != nil {
		return err
	}
	child, err := parseTarget(d.ExecutionID)
	if err != nil {
		return err
	}
	reason := "parent " + r.ExecutionID.String() + " closed (parent close policy " + d.Policy + ")"
	if d.Policy == string(harvest.ParentCloseRequestCancel) {
		_, err = e.cfg.Outbound.Cancel(ctx, child, reason)
		return err
	}
	_, err = e.cfg.Outbound.Terminate(ctx, child, reason)
	return err
}

// queueChildStart notes the child's start (or its refusal) in the
// parent's children row; a parent that closed before the start was
// answered gets its close policy applied now.
func queueChildStart(b *pgx.Batch, parent *store.Exec, a outboxAnswer) error {
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
	if parent != nil && IsTerminal(parent.State) {
		store.QueueClosePolicyOutbox(b, []uuid.UUID{parent.ID})
	}
	return nil
}

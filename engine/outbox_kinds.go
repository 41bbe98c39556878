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
func queueOutboxCommand(w *writeSet, ex *execRow, c harvest.Command) error {
	switch c.Type {
	case harvest.EventSignalExternalInitiated:
		d, err := payload[harvest.SignalExternalInitiatedData](c)
		if err != nil {
			return fmt.Errorf("decode SignalExternalInitiated: %w", err)
		}
		return w.outbox.Add(ex.ID, d.CommandID, outboxSignal, d)
	case harvest.EventChildWorkflowInitiated:
		d, err := payload[harvest.ChildWorkflowInitiatedData](c)
		if err != nil {
			return fmt.Errorf("decode ChildWorkflowInitiated: %w", err)
		}
		w.children.add(ex.ID, d)
		return w.outbox.Add(ex.ID, d.CommandID, outboxStartChild, d)
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
func queueChildStart(b *pgx.Batch, parent *execRow, r store.OutboxRow, outcome *harvest.Command, answer error) error {
	if answer != nil {
		b.Queue(`UPDATE harvest_children SET start_error = $3 WHERE parent_execution_id = $1 AND command_id = $2`,
			r.ExecutionID, r.CommandID, answer.Error())
		return nil
	}
	d, err := payload[harvest.ChildWorkflowStartedData](*outcome)
	if err != nil {
		return fmt.Errorf("decode ChildWorkflowStarted: %w", err)
	}
	b.Queue(`UPDATE harvest_children SET child_execution_id = $3 WHERE parent_execution_id = $1 AND command_id = $2`,
		r.ExecutionID, r.CommandID, d.ExecutionID)
	if parent != nil && IsTerminal(parent.State) {
		b.Queue(closePolicyOutbox, []uuid.UUID{parent.ID})
	}
	return nil
}

// childRows are the children rows a write set inserts.
type childRows struct {
	parents                               []uuid.UUID
	commandIDs, names, workflowIDs, plans []string
}

func (c *childRows) add(parent uuid.UUID, d harvest.ChildWorkflowInitiatedData) {
	c.parents = append(c.parents, parent)
	c.commandIDs, c.names = append(c.commandIDs, d.CommandID), append(c.names, d.WorkflowName)
	c.workflowIDs, c.plans = append(c.workflowIDs, d.WorkflowID), append(c.plans, d.ParentClosePolicy)
}

func (c *childRows) queue(b *pgx.Batch) {
	if len(c.parents) == 0 {
		return
	}
	b.Queue(`
		INSERT INTO harvest_children (parent_execution_id, command_id, workflow_name, workflow_id, close_policy)
		SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[])
		ON CONFLICT DO NOTHING`, c.parents, c.commandIDs, c.names, c.workflowIDs, c.plans)
}

// closeOutbox inserts, with the close of the runs $1, the outbox rows
// their closes cause: a closing child's report to its parent (a run
// started under a harvest.ChildStartKey remembers its parent in its
// idempotency key), and the close policy of each child of a closing
// parent (closePolicyOutbox). A run that continues as new reports
// nothing: its chain goes on, and the chain's last run reports for it
// (the chain's first run holds the key), under the chain's id.
const closeOutbox = `
	INSERT INTO harvest_outbox (execution_id, command_id, kind, request)
	SELECT x.execution_id, '', 'child_done',
	       jsonb_build_object('parent', split_part(k.key, ':', 3), 'command_id', split_part(k.key, ':', 4),
	                          'chain', coalesce(x.chain_id, x.execution_id),
	                          'state', x.state, 'output', x.output, 'error', x.error)
	  FROM harvest_executions x
	 CROSS JOIN LATERAL (SELECT coalesce(x.idempotency_key,
	                            (SELECT f.idempotency_key FROM harvest_executions f WHERE f.execution_id = x.chain_id)) AS key) k
	 WHERE x.execution_id = ANY($1) AND k.key LIKE 'hv:child:%'
	   AND x.state NOT IN ('RUNNING', 'CONTINUED_AS_NEW')
	UNION ALL` + closePolicyRows + `
	ON CONFLICT DO NOTHING`

// closePolicyOutbox inserts the close policy rows of the closed parents
// $1 alone.
const closePolicyOutbox = `
	INSERT INTO harvest_outbox (execution_id, command_id, kind, request)` + closePolicyRows + `
	ON CONFLICT DO NOTHING`

// closePolicyRows are the children of the closed parents $1 that were
// started, have not reported their close and are not abandoned.
const closePolicyRows = `
	SELECT c.parent_execution_id, c.command_id, 'close_child',
	       jsonb_build_object('execution_id', c.child_execution_id, 'policy', c.close_policy)
	  FROM harvest_children c
	 WHERE c.parent_execution_id = ANY($1) AND c.child_execution_id IS NOT NULL AND c.close_policy <> 'abandon'
	   AND NOT EXISTS (SELECT 1 FROM harvest_signals s
	                    WHERE s.execution_id = c.parent_execution_id
	                      AND s.idempotency_key = 'hv:childdone:' || c.child_execution_id::text)`

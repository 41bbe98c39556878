package harvest

import (
	"encoding/json"
	"fmt"
	"time"
)

// ParentClosePolicy is what happens to a child still open when its parent
// closes (any way: completed, failed, cancelled, timed out, terminated).
type ParentClosePolicy string

// Parent close policies.
const (
	// ParentCloseTerminate terminates the child (the default).
	ParentCloseTerminate ParentClosePolicy = "terminate"
	// ParentCloseRequestCancel asks the child to cancel.
	ParentCloseRequestCancel ParentClosePolicy = "request_cancel"
	// ParentCloseAbandon leaves the child running.
	ParentCloseAbandon ParentClosePolicy = "abandon"
)

// ChildOptions configures a child workflow (Workflow.Execute).
type ChildOptions struct {
	// WorkflowID is the child's business id; empty: "<parent execution
	// id>-<command id>", the same on every replay.
	WorkflowID string
	// ParentClosePolicy applies when the parent closes while the child is
	// open (default ParentCloseTerminate).
	ParentClosePolicy ParentClosePolicy
	// ExecutionTimeout and RunTimeout bound the child (0: the child
	// workflow's defaults).
	ExecutionTimeout time.Duration
	RunTimeout       time.Duration
	// ConcurrencyKey, Priority, FairnessKey and FairnessWeight are the
	// child's flow control fields when its workflow is under a
	// concurrency limit, as a start's (README "Flow control"; zero: the
	// limit's key pointer, the default priority, no fairness key, weight
	// 1).
	ConcurrencyKey string
	Priority       int
	FairnessKey    string
	FairnessWeight int
}

// ChildExecution names a started child run.
type ChildExecution struct {
	ExecutionID string `json:"execution_id"`
	WorkflowID  string `json:"workflow_id"`
}

// ChildFuture is the eventual result of a child workflow: Get (and a
// Selector) waits for the child's close; Started for its start.
type ChildFuture[Out any] struct {
	Future[Out]
	started *future
}

// Started blocks until the child run exists and returns it; the error of
// a refused start (a *ChildWorkflowError of State "START_FAILED").
func (c ChildFuture[Out]) Started(ctx Context) (ChildExecution, error) {
	return Future[ChildExecution]{f: c.started}.Get(ctx)
}

// ChildWorkflowError is what a child's future returns when the child did
// not complete: State is its final state (FAILED, TIMED_OUT, CANCELLED,
// TERMINATED), or START_FAILED when the start was refused; Info is the
// child's error as recorded.
type ChildWorkflowError struct {
	WorkflowName string
	WorkflowID   string
	ExecutionID  string
	State        string
	Info         ErrorInfo
}

func (e *ChildWorkflowError) Error() string {
	msg := e.Info.Message
	if msg == "" {
		msg = "no error recorded"
	}
	return fmt.Sprintf("child workflow %s %s %s: %s", e.WorkflowName, e.WorkflowID, e.State, msg)
}

// Is makes errors.Is(err, ErrChildWorkflow) true.
func (e *ChildWorkflowError) Is(target error) bool { return target == ErrChildWorkflow }

// Execute starts a run of w as a child of the calling workflow and returns
// its future. The start is exactly once: the parent's task records
// ChildWorkflowInitiated in its own transaction, and the engine then
// performs a keyed start (ChildStartKey) through the normal routing, on
// any shard and node, until it is answered. The child's close comes back
// as a keyed signal, so the future resolves exactly once.
func (w *Workflow[In, Out]) Execute(ctx Context, in In, opts ...ChildOptions) ChildFuture[Out] {
	return executeChild[Out](ctx, w.name, in, opts)
}

// Execute is Workflow.Execute for a workflow known by reference.
func (r WorkflowReference[In, Out]) Execute(ctx Context, in In, opts ...ChildOptions) ChildFuture[Out] {
	return executeChild[Out](ctx, r.name, in, opts)
}

func executeChild[Out any](ctx Context, name string, in any, opts []ChildOptions) ChildFuture[Out] {
	var o ChildOptions
	if len(opts) > 0 {
		o = opts[len(opts)-1]
	}
	raw, err := encodeValue(in)
	if err == nil {
		err = ctx.Err()
	}
	if err == nil {
		err = o.check()
	}
	if err != nil {
		f := resolvedFuture(nil, err)
		return ChildFuture[Out]{Future: Future[Out]{f: f}, started: f}
	}
	c := ctx.state().startChild(name, raw, o)
	return ChildFuture[Out]{Future: Future[Out]{f: c.result}, started: c.started}
}

func (o ChildOptions) check() error {
	switch o.ParentClosePolicy {
	case "", ParentCloseTerminate, ParentCloseRequestCancel, ParentCloseAbandon:
	default:
		return fmt.Errorf("child options: unknown parent close policy %q", o.ParentClosePolicy)
	}
	if o.ExecutionTimeout < 0 || o.RunTimeout < 0 {
		return fmt.Errorf("child options: negative timeout")
	}
	if o.Priority != 0 && (o.Priority < PriorityHighest || o.Priority > PriorityLowest) {
		return fmt.Errorf("child options: priority %d is out of range (%d … %d)", o.Priority, PriorityHighest, PriorityLowest)
	}
	if o.FairnessWeight < 0 || o.FairnessWeight > MaxFairnessWeight {
		return fmt.Errorf("child options: fairness weight %d is out of range (1 … %d)", o.FairnessWeight, MaxFairnessWeight)
	}
	return nil
}

// childRun is one child command's futures.
type childRun struct {
	name, workflowID string
	started, result  *future
}

func (s *runState) startChild(name string, input json.RawMessage, o ChildOptions) *childRun {
	id := s.nextSeq()
	if o.WorkflowID == "" {
		o.WorkflowID = s.keyBase + "-" + id
	}
	if o.ParentClosePolicy == "" {
		o.ParentClosePolicy = ParentCloseTerminate
	}
	d := ChildWorkflowInitiatedData{CommandID: id, WorkflowName: name, WorkflowID: o.WorkflowID, Input: input,
		ParentClosePolicy: string(o.ParentClosePolicy), ExecutionTimeoutMS: o.ExecutionTimeout.Milliseconds(),
		RunTimeoutMS: o.RunTimeout.Milliseconds(), IdempotencyKey: ChildStartKey(s.keyBase, id),
		ConcurrencyKey: o.ConcurrencyKey, Priority: o.Priority, FairnessKey: o.FairnessKey, FairnessWeight: o.FairnessWeight}
	a := childArgs(d)
	d.Digest = a.sum
	s.issue(EventChildWorkflowInitiated, id, name, a, func() any { return d })
	c := &childRun{name: name, workflowID: o.WorkflowID, started: &future{}, result: &future{}}
	s.children[id] = c
	return c
}

// childStarted resolves a child's start from ChildWorkflowStarted or
// ChildWorkflowStartFailed.
func (s *runState) childStarted(ev Event, commandID, executionID, workflowID string, info ErrorInfo) error {
	c, ok := s.children[commandID]
	if !ok {
		return &NonDeterminismError{EventID: ev.EventID, Message: fmt.Sprintf("%s for child %s that the code did not start", ev.Type, commandID)}
	}
	if ev.Type == EventChildWorkflowStartFailed {
		err := &ChildWorkflowError{WorkflowName: c.name, WorkflowID: c.workflowID, State: "START_FAILED", Info: info}
		c.started.resolve(nil, err)
		c.result.resolve(nil, err)
		c.result.seq = s.tick()
		return nil
	}
	c.started.resolve(mustJSON(ChildExecution{ExecutionID: executionID, WorkflowID: workflowID}), nil)
	c.started.seq = s.tick()
	return nil
}

// childClosed resolves a child's result from its ChildClosedSignal.
func (s *runState) childClosed(ev Event, payload json.RawMessage) error {
	var d ChildClosedData
	if err := json.Unmarshal(payload, &d); err != nil {
		return &NonDeterminismError{EventID: ev.EventID, Message: "undecodable child close: " + err.Error()}
	}
	c, ok := s.children[d.CommandID]
	if !ok {
		// A child of an earlier run of this continue-as-new chain: the
		// report reached the chain's current run, which did not start it.
		return nil
	}
	// The close may overtake ChildWorkflowStarted: it starts the child too.
	c.started.resolve(mustJSON(ChildExecution{ExecutionID: d.ExecutionID, WorkflowID: c.workflowID}), nil)
	if d.State == "COMPLETED" {
		c.result.resolve(d.Output, nil)
	} else {
		info := ErrorInfo{Message: "child " + d.State}
		if d.Error != nil {
			info = *d.Error
		}
		c.result.resolve(nil, &ChildWorkflowError{WorkflowName: c.name, WorkflowID: c.workflowID,
			ExecutionID: d.ExecutionID, State: d.State, Info: info})
	}
	c.result.seq = s.tick()
	return nil
}

func childDigest(d ChildWorkflowInitiatedData) string {
	g := newDigest("child", len(d.WorkflowName)+len(d.WorkflowID)+len(d.Input))
	g.str(d.WorkflowName)
	g.str(d.WorkflowID)
	g.bytes(d.Input)
	g.str(d.ParentClosePolicy)
	g.int(d.ExecutionTimeoutMS)
	g.int(d.RunTimeoutMS)
	if d.ConcurrencyKey != "" || d.Priority != 0 || d.FairnessKey != "" || d.FairnessWeight != 0 {
		// Only when set: the digests of histories recorded before the
		// flow fields existed stay what they were.
		g.str(d.ConcurrencyKey)
		g.int(int64(d.Priority))
		g.str(d.FairnessKey)
		g.int(int64(d.FairnessWeight))
	}
	return g.sum()
}

func childArgs(d ChildWorkflowInitiatedData) args {
	return args{sum: childDigest(d), field: "input or options"}
}

package demo

import (
	"fmt"

	"github.com/harvestd/harvest"
)

// Workflows of several runs: a parent with children, and a signal sent
// from one workflow to another.
const (
	// ParentChainName starts ParentChainInput.Children noop_chain
	// children at once and returns the sum of their results: the workflow
	// harvestctl bench --children measures.
	ParentChainName = "parent_chain"
	// ParentChainMax bounds ParentChainInput.Children.
	ParentChainMax = 20
	// ApproverName approves an order run by an "approved" signal sent from
	// workflow code (harvest.SignalExternal, or SignalExternalWorkflow to
	// an order's workflow id).
	ApproverName = "approver"
)

// ParentChainInput is the parent_chain workflow's input.
type ParentChainInput struct {
	Children   int `json:"children"`
	Activities int `json:"activities"`
	// Policy is the children's parent close policy (default terminate).
	Policy string `json:"policy,omitempty"`
	// ChildWorkflowID, when set, names child i "<ChildWorkflowID>-<i>"
	// (default: "<parent execution id>-<command id>").
	ChildWorkflowID string `json:"child_workflow_id,omitempty"`
}

// ApproverInput is the approver workflow's input.
type ApproverInput struct {
	// Order is the execution id of the order run to approve.
	Order string `json:"order"`
	// OrderWorkflow and OrderWorkflowID, when set instead, name the order
	// by its workflow (name and id): its running run is approved.
	OrderWorkflow   string `json:"order_workflow,omitempty"`
	OrderWorkflowID string `json:"order_workflow_id,omitempty"`
	By              string `json:"by"`
}

// parentChain runs the children in parallel and adds their results up.
func (d *Demo) parentChain(ctx harvest.Context, in ParentChainInput) (int, error) {
	if in.Children < 0 || in.Children > ParentChainMax {
		return 0, harvest.NewNonRetryableError("invalid_input", fmt.Sprintf("children must be 0..%d", ParentChainMax))
	}
	opts := harvest.ChildOptions{ParentClosePolicy: harvest.ParentClosePolicy(in.Policy)}
	futures := make([]harvest.ChildFuture[int], in.Children)
	for i := range futures {
		if in.ChildWorkflowID != "" {
			opts.WorkflowID = fmt.Sprintf("%s-%d", in.ChildWorkflowID, i)
		}
		futures[i] = d.NoopChain.Execute(ctx, NoopChainInput{Activities: in.Activities}, opts)
	}
	sum := 0
	for _, f := range futures {
		n, err := f.Get(ctx)
		if err != nil {
			return sum, err
		}
		sum += n
	}
	return sum, nil
}

// approver sends the order its approval and returns once it landed.
func (d *Demo) approver(ctx harvest.Context, in ApproverInput) (string, error) {
	var sent harvest.Future[struct{}]
	if in.OrderWorkflowID != "" {
		sent = harvest.SignalExternalWorkflow(ctx, in.OrderWorkflow, in.OrderWorkflowID, Approved, Approval{By: in.By})
	} else {
		sent = harvest.SignalExternal(ctx, in.Order, Approved, Approval{By: in.By})
	}
	if _, err := sent.Get(ctx); err != nil {
		return "", err
	}
	return "approved", nil
}

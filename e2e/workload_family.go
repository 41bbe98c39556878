package e2e

import (
	"fmt"
	"math/rand/v2"
	"net/http"
)

// Parents and approvers: the child-workflow and external-signal part of
// the workload.
//
// A parent starts the demo parent_chain with 1 to 3 children of one
// activity each (parent close policy terminate); the checker
// (checker_family.go) finds its children by their system start keys
// (hv:child:<parent>:...) in every shard. An approver chain starts an
// order, approves it, then starts the demo approver on that order run:
// the approver's SignalExternal lands one more "approved" in the order
// (keyed hv:sig:<approver>:1), or fails execution_terminal when the
// order had closed.

// Workflows of the demo's family part.
const (
	wfParent   = "parent_chain"
	wfChild    = "noop_chain"
	wfApprover = "approver"
)

// parentChain starts parent n with 1 to 3 children.
func parentChain(n int64) chain {
	return chain{ops: []*Op{{Kind: KindStart, Workflow: wfParent, Key: fmt.Sprintf("par-%d", n), Children: 1 + rand.IntN(3)}}}
}

// approverChain starts order n, approves it and starts an approver of it.
func approverChain(n int64) chain {
	return chain{ops: []*Op{
		{Kind: KindStart, Workflow: wfOrder, Key: fmt.Sprintf("orda-%d", n)},
		{Kind: KindSignal, Workflow: wfOrder, Key: fmt.Sprintf("orda-%d-approved", n)},
		{Kind: KindStart, Workflow: wfApprover, Key: fmt.Sprintf("apr-%d", n)},
	}}
}

// familyStart is the request of a parent or approver start (ok false for
// other workflows).
func familyStart(op *Op) (request, bool) {
	var input any
	switch op.Workflow {
	case wfParent:
		input = map[string]any{"children": op.Children, "activities": 1, "policy": "terminate"}
	case wfApprover:
		input = map[string]any{"order": op.Target, "by": "e2e"}
	default:
		return request{}, false
	}
	return request{http.MethodPost, "/api/harvest/workflows/" + op.Workflow + "/start", op.Key,
		map[string]any{"input": input}}, true
}

// needsTarget reports whether op is sent to (or about) an execution an
// earlier start of its chain named.
func needsTarget(op *Op) bool {
	return op.Kind == KindSignal || op.Kind == KindCancel || op.Kind == KindUpdate || op.Kind == KindReset || op.Workflow == wfApprover
}

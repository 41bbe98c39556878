package e2e

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"
)

// Resets: the reset part of the workload (issue 44).
//
// A reset chain starts order ordr-<n>, waits until it is mostly charged and
// waiting for its approval, resets it (keyed ordr-<n>-reset; to its first
// task for an even n, which charges again under the charge's key, to its
// last task for an odd one, which keeps the charge), then approves it
// through the first run's id, which reaches the reset run. A re-delivery
// repeats the reset's key; a parked one is re-sent after the heal. The
// checker (checker_reset.go) proves each reset key made one run, whose
// activities carry the keys the first run's had (the charge is the same
// charge), and (the generic checks) that the order completed once.

// KindReset is a keyed reset of an execution.
const KindReset = "reset"

// resetChain starts order n, resets it and approves it.
func resetChain(n int64) chain {
	return chain{ops: []*Op{
		{Kind: KindStart, Workflow: wfOrder, Key: fmt.Sprintf("ordr-%d", n)},
		{Kind: KindReset, Workflow: wfOrder, Key: fmt.Sprintf("ordr-%d-reset", n)},
		{Kind: KindSignal, Workflow: wfOrder, Key: fmt.Sprintf("ordr-%d-approved", n)},
	}, cancelAfter: 200*time.Millisecond + rand.N(600*time.Millisecond)}
}

// resetRequest resets op.Target under op.Key: to the first task for an
// even order, the last for an odd one.
func resetRequest(op *Op) request {
	point := "first"
	var n int64
	if _, err := fmt.Sscanf(op.Key, "ordr-%d-reset", &n); err == nil && n%2 == 1 {
		point = "last_task"
	}
	return request{http.MethodPost, "/api/harvest/workflows/" + op.Target + "/reset", op.Key,
		map[string]any{"point": point, "reason": "e2e " + op.Key}}
}

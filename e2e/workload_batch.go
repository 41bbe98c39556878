package e2e

import (
	"fmt"
	"net/http"
	"time"
)

// Batch jobs: the batch operations part of the workload (issue 44).
//
// A batch chain starts 3 demo approval races (an approved signal, or
// their auto-approval activity after 3 s, whichever comes first), then
// creates a keyed batch job that signals approved to every RUNNING race
// started before it, at 200 a second: its own races, and any other
// chain's still waiting. (An auto-approval that never answers would hold
// an activity worker for good: 2 races a second would take them all.) A re-delivery repeats the job's key; a parked one is re-sent
// after the heal. The checker (checker_batch.go) proves each job's signal
// reached each run at most once, each job ended with no failed item, and
// (the generic check) every race completed.

// The names a batch chain uses.
const (
	wfRace  = "approval_race" // demo/approval_race.go
	wfBatch = "hv.batch"      // internal/batchop
)

// batchChain starts races n-0..2 and creates batch job n.
func batchChain(n int64) chain {
	var ops []*Op
	for i := range 3 {
		ops = append(ops, &Op{Kind: KindStart, Workflow: wfRace, Key: fmt.Sprintf("race-%d-%d", n, i)})
	}
	return chain{ops: append(ops, &Op{Kind: KindBatchJob, Workflow: wfBatch, Key: fmt.Sprintf("batch-%d", n)})}
}

// raceInput waits for the approved signal, or 3 s for the auto-approval.
func raceInput() map[string]any {
	return map[string]any{"auto_approve_ms": 3000, "timeout_ms": int64(2 * time.Hour / time.Millisecond)}
}

// batchJobRequest creates batch job op.Key.
func batchJobRequest(op *Op) request {
	return request{http.MethodPost, "/api/harvest/batch", op.Key, map[string]any{
		"operation": "signal", "signal_name": sigApproved, "signal_payload": map[string]any{"by": "batch"}, "rate": 200,
		"filter": map[string]any{"workflow_name": wfRace, "states": []string{"RUNNING"}}}}
}

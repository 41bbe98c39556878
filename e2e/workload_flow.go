package e2e

import (
	"fmt"
	"strconv"
	"strings"
)

// Flow control: the demo's report, at most two runs per customer at
// once (per shard), each rendered by render_report, one attempt per
// customer at once. The workload starts reports of two customers, so
// that their queues fill and drain through the faults; the checker
// (checker_flow.go) bounds every key's runs holding slots at once and
// finds every report completed after the heal (no slot leaked, no queue
// stuck).

// Workflow and limit of the flow part (demo.ReportName,
// demo.ReportMaxRunning).
const (
	wfReport        = "report"
	reportMax       = 2
	reportCustomers = 2
)

// reportChain starts report n.
func reportChain(n int64) chain {
	return chain{ops: []*Op{{Kind: KindStart, Workflow: wfReport, Key: fmt.Sprintf("rep-%d", n)}}}
}

// reportInput is the input of the report of key rep-<n>: its customer is
// one of reportCustomers, and it sleeps a second (long enough for queues
// to form).
func reportInput(key string) map[string]any {
	n, _ := strconv.Atoi(strings.TrimPrefix(key, "rep-"))
	return map[string]any{"customer": fmt.Sprintf("cust-%d", n%reportCustomers), "sleep_ms": 1000}
}

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

// The part counted across the cluster: the demo's export, at most two
// runs per tenant at once on the whole cluster (demo.ExportName,
// demo.ExportMaxRunning), its slots kept by each tenant's keeper, a
// system workflow run (wfKeeper) that never completes.
const (
	wfExport      = "export"
	exportMax     = 2
	exportTenants = 2
	wfKeeper      = "hv.flow.keeper"
)

// exportChain starts export n.
func exportChain(n int64) chain {
	return chain{ops: []*Op{{Kind: KindStart, Workflow: wfExport, Key: fmt.Sprintf("exp-%d", n)}}}
}

// exportInput is the input of the export of key exp-<n>: one of
// exportTenants, sleeping a second.
func exportInput(key string) map[string]any {
	n, _ := strconv.Atoi(strings.TrimPrefix(key, "exp-"))
	return map[string]any{"tenant": fmt.Sprintf("tenant-%d", n%exportTenants), "sleep_ms": 1000}
}

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

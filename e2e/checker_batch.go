package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Batch jobs (the workload's batch chains).
//
//   - Each job's signal reached each run at most once: one SignalReceived
//     per (run, hv:batch:<job>:<run>), whatever was repeated.
//   - Each acknowledged job that completed counted every item (matched =
//     done + skipped + failed) and failed none (its races accept the
//     signal; a closed one is skipped).

// CheckBatchOnce is the check of the batch jobs.
const CheckBatchOnce = "batch job -> each run's item once, none failed"

// batchKeyPrefix starts a batch job's item keys (batchop.KeyPrefix).
const batchKeyPrefix = "hv:batch:"

// batchProgress is the part of a job's result the checker reads.
type batchProgress struct {
	Matched, Done, Skipped, Failed int64
	LastError                      string `json:"last_error"`
}

// checkBatches checks every batch item key and every acknowledged job.
func checkBatches(ops []*Op, st *DBState, add func(check, format string, args ...any)) {
	for _, k := range sortedKeys(st.signals) {
		if n := st.signals[k]; strings.HasPrefix(k[1], batchKeyPrefix) && n != 1 {
			add(CheckBatchOnce, "run %s has %d SignalReceived events keyed %q", k[0], n, k[1])
		}
	}
	seen := map[string]bool{}
	for _, op := range ops {
		if op.Kind == KindBatchJob && op.OK && !seen[op.ExecID] {
			seen[op.ExecID] = true
			checkBatchJob(st, op.ExecID, add)
		}
	}
}

// checkBatchJob checks the result of job id's chain, once it completed
// (CheckCompleted reports a job that did not).
func checkBatchJob(st *DBState, id string, add func(check, format string, args ...any)) {
	x := st.execs[id]
	for x != nil && x.continuedTo != "" {
		x = st.execs[x.continuedTo]
	}
	if x == nil || x.state != "COMPLETED" {
		return
	}
	var p batchProgress
	if err := json.Unmarshal([]byte(x.output), &p); err != nil {
		add(CheckBatchOnce, "batch job %s: its result does not decode: %v", id, err)
		return
	}
	if p.Matched != p.Done+p.Skipped+p.Failed || p.Failed != 0 {
		add(CheckBatchOnce, "batch job %s: matched %d, done %d, skipped %d, failed %d (%s)", id, p.Matched, p.Done, p.Skipped, p.Failed, p.LastError)
	}
}

// BatchStats summarizes the batch jobs for the report's notes: the jobs
// answered, their items by outcome (of the jobs that completed), and the
// runs their signals reached.
func BatchStats(ops []*Op, st *DBState) string {
	jobs := map[string]bool{}
	for _, op := range ops {
		if op.Kind == KindBatchJob && op.OK {
			jobs[op.ExecID] = true
		}
	}
	var total batchProgress
	completed := 0
	for id := range jobs {
		x := st.execs[id]
		for x != nil && x.continuedTo != "" {
			x = st.execs[x.continuedTo]
		}
		var p batchProgress
		if x == nil || x.state != "COMPLETED" || json.Unmarshal([]byte(x.output), &p) != nil {
			continue
		}
		completed++
		total.Matched, total.Done, total.Skipped, total.Failed = total.Matched+p.Matched, total.Done+p.Done, total.Skipped+p.Skipped, total.Failed+p.Failed
	}
	items := 0
	for k := range st.signals {
		if strings.HasPrefix(k[1], batchKeyPrefix) {
			items++
		}
	}
	return fmt.Sprintf("batch jobs: %d answered, %d completed: %d items matched, %d done, %d skipped, %d failed; %d runs got a job's signal",
		len(jobs), completed, total.Matched, total.Done, total.Skipped, total.Failed, items)
}

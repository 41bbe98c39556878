package e2e

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Webhook deliveries (workload_webhook.go). A delivery to the start
// receiver is a keyed start under hv:webhook:chaos:<delivery id>, so per
// delivery id the workload sent:
//   - at most one run in any shard, and one when some delivery of it was
//     answered; no run of a delivery id nobody sent;
//   - every answer names that run, and at most one says it started it
//     (deduplicated false; a redelivery is deduplicated);
//   - the run is the receiver's workflow with the delivery's payload as
//     its input.
//
// A delivery to the signal-with-start receiver signals its counter's
// workflow id under the key hv:webhook:chaos-sws:<delivery id>, scoped to
// the workflow id, so per counter:
//   - one run of its workflow id in any shard (a redelivery after the
//     counter completed starts nothing), which every answer names;
//   - the run completed with each of its delivery ids added exactly once
//     (its output's ids) and one SignalReceived per delivery key; at
//     most one answer per delivery id says it delivered the signal.

// Check names of the webhook part.
const (
	CheckWebhookOnce = "webhook delivery id -> one run"
	CheckWebhookSWS  = "webhook signal-with-start -> one run, each event once"
)

// checkWebhooks checks the runs per delivery id and the answers.
func checkWebhooks(ops []*Op, st *DBState, add func(check, format string, args ...any)) {
	sent := map[string][]*Op{}
	counters := map[string][]*Op{} // counter workflow id -> its deliveries
	for _, op := range sortedOps(ops) {
		switch {
		case op.Kind == KindWebhook && op.Workflow == wfCounter:
			counters[op.WorkflowID] = append(counters[op.WorkflowID], op)
		case op.Kind == KindWebhook:
			sent[op.Key] = append(sent[op.Key], op)
		}
	}
	checkWebhookCounters(counters, st, add)
	runs := map[string][]*execRow{}
	for _, id := range sortedKeys(st.execs) {
		x := st.execs[id]
		delivery, ok := strings.CutPrefix(x.ik, webhookKeyPrefix)
		if !ok {
			continue
		}
		if sent[delivery] == nil {
			add(CheckPhantom, "execution %s has the key %q of a webhook delivery nobody sent", x.id, x.ik)
			continue
		}
		runs[delivery] = append(runs[delivery], x)
	}
	for _, id := range sortedKeys(sent) {
		checkDelivery(id, sent[id], runs[id], st, add)
	}
}

// checkDelivery checks one delivery id's run and answers.
func checkDelivery(id string, ops []*Op, runs []*execRow, st *DBState, add func(check, format string, args ...any)) {
	if len(runs) > 1 {
		add(CheckWebhookOnce, "delivery %q has %d runs: %s", id, len(runs), runIDs(runs))
	}
	fresh := 0
	for _, op := range ops {
		if !op.OK {
			continue
		}
		if op.Dedup != nil && !*op.Dedup {
			fresh++
		}
		switch {
		case len(runs) == 0:
			add(CheckWebhookOnce, "delivery %q was answered %d with run %s, and no shard holds a run of its key", id, op.Status, op.ExecID)
			return
		case !containsRun(runs, op.ExecID):
			add(CheckWebhookOnce, "op %d: delivery %q was answered with run %s, not a run of its key (%s)", op.ID, id, op.ExecID, runIDs(runs))
		}
	}
	if fresh > 1 {
		add(CheckWebhookOnce, "delivery %q was answered as a fresh start %d times", id, fresh)
	}
	for _, x := range runs {
		if x.name != ops[0].Workflow {
			add(CheckWebhookOnce, "delivery %q ran %s (%s), want %s", id, x.id, x.name, ops[0].Workflow)
		}
		if in, want := st.runInputs[x.id], webhookPayload(ops[0]); !sameJSON(in, string(want)) {
			add(CheckWebhookOnce, "delivery %q: its run %s got the input %s, want %s", id, x.id, in, want)
		}
	}
}

// checkWebhookCounters checks the counters the signal-with-start
// receiver fed.
func checkWebhookCounters(counters map[string][]*Op, st *DBState, add func(check, format string, args ...any)) {
	runs := map[string][]*execRow{}
	for _, id := range sortedKeys(st.execs) {
		x := st.execs[id]
		if x.name != wfCounter || !strings.HasPrefix(x.wfID, webhookCounterPrefix) {
			continue
		}
		if counters[x.wfID] == nil {
			add(CheckPhantom, "counter %s has the workflow id %q, which no webhook delivery named", x.id, x.wfID)
			continue
		}
		runs[x.wfID] = append(runs[x.wfID], x)
	}
	for _, wfID := range sortedKeys(counters) {
		checkWebhookCounter(wfID, counters[wfID], runs[wfID], st, add)
	}
}

// checkWebhookCounter checks one counter fed by webhook deliveries.
func checkWebhookCounter(wfID string, ops []*Op, runs []*execRow, st *DBState, add func(check, format string, args ...any)) {
	switch {
	case len(runs) == 0:
		for _, op := range ops {
			if op.OK {
				add(CheckWebhookSWS, "delivery %q to counter %q was answered with run %s, and no shard holds a run of the workflow id",
					op.Key, wfID, op.ExecID)
				return
			}
		}
		return
	case len(runs) > 1:
		add(CheckWebhookSWS, "counter %q has %d runs: %s", wfID, len(runs), runIDs(runs))
	}
	x := runs[0] // the run the answers name, if any
	for _, op := range ops {
		if op.OK && containsRun(runs, op.ExecID) {
			x = st.execs[op.ExecID]
			break
		}
	}
	delivered := map[string]int{}
	want := map[string]bool{}
	for _, op := range ops {
		want[op.Key] = true
		if !op.OK {
			continue
		}
		if !containsRun(runs, op.ExecID) {
			add(CheckWebhookSWS, "op %d: delivery %q to counter %q was answered with run %s, not a run of it (%s)",
				op.ID, op.Key, wfID, op.ExecID, runIDs(runs))
		}
		if op.Dedup != nil && !*op.Dedup {
			if delivered[op.Key]++; delivered[op.Key] == 2 {
				add(CheckWebhookSWS, "delivery %q to counter %q was answered as delivered more than once", op.Key, wfID)
			}
		}
	}
	var out counterOutput
	if x.state != "COMPLETED" || json.Unmarshal([]byte(x.output), &out) != nil {
		add(CheckWebhookSWS, "counter %q (%s) is %s with the output %q", wfID, x.id, x.state, x.output)
		return
	}
	got := map[string]int{}
	for _, id := range out.IDs {
		got[id]++
	}
	for _, id := range sortedKeys(want) {
		if got[id] != 1 {
			add(CheckWebhookSWS, "counter %q (%s) added delivery %q %d times", wfID, x.id, id, got[id])
		}
		if n := st.signals[[2]string{x.id, webhookSWSKeyPrefix + id}]; n != 1 {
			add(CheckWebhookSWS, "counter %q (%s) has %d SignalReceived with the key of delivery %q", wfID, x.id, n, id)
		}
	}
	for _, id := range sortedKeys(got) {
		if !want[id] {
			add(CheckWebhookSWS, "counter %q (%s) added %q, which no delivery to it carried", wfID, x.id, id)
		}
	}
}

func containsRun(runs []*execRow, id string) bool {
	for _, x := range runs {
		if x.id == id {
			return true
		}
	}
	return false
}

// WebhookStats summarizes the webhook deliveries for the report's notes.
func WebhookStats(ops []*Op, st *DBState) string {
	ids, counters := map[string]bool{}, map[string]bool{}
	var deliveries, answered, fresh, dedup, redeliveries int
	for _, op := range ops {
		if op.Kind != KindWebhook {
			continue
		}
		ids[op.Key] = true
		if op.WorkflowID != "" {
			counters[op.WorkflowID] = true
		}
		deliveries++
		if op.Dup || op.Redelivery {
			redeliveries++
		}
		if op.OK {
			answered++
			if op.Dedup != nil && *op.Dedup {
				dedup++
			} else {
				fresh++
			}
		}
	}
	// Redeliveries answered through another node than the delivery id's
	// first answer.
	firstNode, elsewhere := map[string]int{}, 0
	for _, op := range sortedOps(ops) {
		if op.Kind != KindWebhook || !op.OK {
			continue
		}
		n := op.Attempts[len(op.Attempts)-1].Node
		if f, ok := firstNode[op.Key]; !ok {
			firstNode[op.Key] = n
		} else if f != n {
			elsewhere++
		}
	}
	runs, counterRuns := 0, 0
	var nodes []string
	for _, x := range st.execs {
		switch {
		case strings.HasPrefix(x.ik, webhookKeyPrefix):
			runs++
		case x.name == wfCounter && strings.HasPrefix(x.wfID, webhookCounterPrefix):
			counterRuns++
		}
	}
	byNode := map[int]int{}
	for _, op := range ops {
		if op.Kind == KindWebhook {
			for _, a := range op.Attempts {
				byNode[a.Node]++
			}
		}
	}
	for n := range byNode {
		nodes = append(nodes, fmt.Sprintf("n%d %d", n, byNode[n]))
	}
	sort.Strings(nodes)
	return fmt.Sprintf("webhooks: %d delivery ids, %d deliveries (%d redeliveries), %d answered (%d fresh, %d deduplicated, "+
		"%d answered through another node than the id's first answer); %d runs of the start receiver's keys; "+
		"%d counters fed by signal-with-start, %d runs of them; attempts by node: %s",
		len(ids), deliveries, redeliveries, answered, fresh, dedup, elsewhere, runs, len(counters), counterRuns, strings.Join(nodes, ", "))
}

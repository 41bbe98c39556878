package e2e

import (
	"fmt"
	"sort"
	"strings"
)

// Webhook deliveries (workload_webhook.go). A delivery is a keyed start
// under hv:webhook:<receiver>:<delivery id>, so per delivery id the
// workload sent:
//   - at most one run in any shard, and one when some delivery of it was
//     answered; no run of a delivery id nobody sent;
//   - every answer names that run, and at most one says it started it
//     (deduplicated false; a redelivery is deduplicated);
//   - the run is the receiver's workflow with the delivery's payload as
//     its input.

// CheckWebhookOnce is the check name of the webhook part.
const CheckWebhookOnce = "webhook delivery id -> one run"

// checkWebhooks checks the runs per delivery id and the answers.
func checkWebhooks(ops []*Op, st *DBState, add func(check, format string, args ...any)) {
	sent := map[string][]*Op{}
	for _, op := range sortedOps(ops) {
		if op.Kind == KindWebhook {
			sent[op.Key] = append(sent[op.Key], op)
		}
	}
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
		if in := st.runInputs[x.id]; !sameJSON(in, string(webhookPayload(id))) {
			add(CheckWebhookOnce, "delivery %q: its run %s got the input %s, want %s", id, x.id, in, webhookPayload(id))
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
	ids := map[string]bool{}
	var deliveries, answered, fresh, dedup, redeliveries int
	for _, op := range ops {
		if op.Kind != KindWebhook {
			continue
		}
		ids[op.Key] = true
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
	runs := 0
	var nodes []string
	for _, x := range st.execs {
		if strings.HasPrefix(x.ik, webhookKeyPrefix) {
			runs++
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
	return fmt.Sprintf("webhooks: %d delivery ids, %d deliveries (%d redeliveries), %d answered (%d started a run, %d deduplicated, "+
		"%d answered through another node than the id's first answer); %d runs of their keys; attempts by node: %s",
		len(ids), deliveries, redeliveries, answered, fresh, dedup, elsewhere, runs, strings.Join(nodes, ", "))
}

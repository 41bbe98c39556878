// Package e2e is Harvest's fault-injection suite, in the manner of Jepsen:
// real harvestd processes, each in its own network namespace on a private
// bridge, share one PostgreSQL server on the bridge address; clients send
// keyed starts, keyed signals, signal-with-start and cooperative cancels
// of orders, and continue-as-new chains (the demo counter, its keyed adds
// sent to the chain's first or latest known run), parents with children
// (the demo parent_chain) and approvers of orders (the demo approver, a
// signal sent from workflow code), reports under a concurrency limit
// (the demo report, two per customer, rendered by an activity limited to
// one per customer), and create, then pause, interval
// schedules (the demo noop_chain every 1-2 s) through random nodes with retries (the
// same key on every retry and on deliberate re-deliveries) while a nemesis kills, pauses, partitions and isolates
// nodes, kills the raft leader, restarts PostgreSQL and drains and adds
// shards. Every client operation is recorded; after the faults are healed a
// checker verifies the history against the shard databases:
//
//   - per (workflow, start key) at most one execution, in any shard;
//   - every acknowledged start exists, every answer for a key names the same
//     execution, and every started workflow completes after the heal;
//   - per (execution, signal key) exactly one SignalReceived, and every
//     acknowledged signal has one;
//   - histories are dense from event 0 with a single WorkflowStarted;
//   - per activity (execution, activity id) one ActivityScheduled and at
//     most one completion;
//   - every cancel is answered 200 (cancel_requested, RUNNING) or 409
//     execution_terminal; at most one answer per execution says
//     newly_cancelled and its history has exactly one
//     WorkflowCancelRequested (none when every answer was a 409); a run
//     asked to cancel ends CANCELLED (COMPLETED if it had finished its
//     last wait before the request) and, charged before the request,
//     refunds exactly once. Cancelled runs count as closed.
//   - per continue-as-new chain one run per link: following continued_to
//     from the first run visits every run once (no fork, no missing or
//     dangling link), every run but the last closed CONTINUED_AS_NEW, and
//     a counter chain has Until/Every (rounded up) runs, as its output
//     counts; its output lists every answered add once and nothing nobody
//     sent (no lost, no doubled signal across the hand-overs), at most one
//     answer per (chain, add key) says signal_delivered whichever run id it
//     was sent to, and the chain completes with count Until.
//   - per parent (the demo parent_chain) as many child runs as it asked
//     for, found by their hv:child:<parent>: start keys in any shard, each
//     COMPLETED, with one ChildWorkflowInitiated and one SignalReceived
//     keyed hv:childdone:<child> per child in the parent; per approver
//     (the demo approver, a SignalExternal to an order the workload
//     started) one SignalReceived keyed hv:sig:<approver>:1 in the order
//     when it completed, none when it failed execution_terminal (the
//     order had closed); every shard's outbox empty after the heal.
//   - per schedule (checker_schedule.go) at most one run per fire key
//     hv:sched:<id>:<generation>:<nominal time> and per nominal time, and
//     every nominal time of its interval grid between its first and last
//     fire has a run or a fire recorded skipped by the overlap policy or
//     a gate (none missed, failed or pending after the heal).
//   - per shard and concurrency key (checker_flow.go) never more runs
//     holding slots at once than the limit, each slot bounded by the
//     run's flow_since and completed_at; every report completed after the
//     heal (none left QUEUED: no slot leaked, no queue stuck).
//
// The nodes run as a deployment does: each run writes a fresh cluster key
// and admin token into its work directory, every node gets both
// (--cluster-key-file, --initial-token-file; with the raft catalog,
// tokens are on), and every request of the clients, the nemesis and the
// readiness checks carries the token.
//
// The suite needs root and network namespaces (it skips, saying why,
// without them) and runs only when HARVEST_E2E=1; it re-executes itself
// inside a private net+mount+pid namespace (unshare), so everything it
// creates, processes and PostgreSQL included, disappears with it:
//
//	HARVEST_E2E=1 go test -run TestChaos -v ./e2e   # short profile, about 3 minutes
//	scripts/chaos.sh --duration 30m                  # long profile
//	scripts/chaos.sh --short --broken                # harvestd -tags harvest_broken_claim: must find violations
//
// More knobs: HARVEST_E2E_NODES, HARVEST_E2E_WORKERS, HARVEST_E2E_SEED,
// HARVEST_E2E_KEEP=1 (keep the work directory: node logs, history.jsonl,
// report.txt), HARVEST_E2E_NFT=none (partition without nftables). The work
// directory is always kept when the run fails.
package e2e

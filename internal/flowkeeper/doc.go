// Package flowkeeper is the keeper of a concurrency key whose limit is
// counted across the cluster rather than per shard (docs/design-notes.md,
// "Cluster-wide slots"). The runs of one key are placed by their own
// workflow ids on every shard, and a shard cannot count another's runs in
// its transaction, so one system workflow run per (workflow, key) — the
// keeper, workflow id WorkflowID — holds the key's slots in its state:
// the chains that hold one and the runs waiting, in grant order
// (priority, then fairness turn, then arrival, as the per-shard
// dispatcher orders them).
//
// Every step between a run and its keeper is a keyed signal, so each is
// exactly once across crashes and retries: a run asks with the acquire
// signal, the keeper answers with the grant signal (an external signal,
// recorded with the keeper's task before it is sent), and the run's close
// gives the slot back with the release signal. State holds the rules and
// is pure; keep is the workflow around it.
package flowkeeper

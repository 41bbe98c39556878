// Package flow is the shard's flow dispatcher: it gives the free slots of
// the concurrency limits to the runs waiting in state QUEUED.
//
// A start of a workflow under a limit (harvest.Workflow.WithConcurrency)
// creates its run QUEUED, with its key, priority and fairness key (the
// intake, and store.QueueMarkQueued). A slot is nothing but the RUNNING
// state of a limited run: whatever closes the run (its code, a cancel, a
// terminate, a timeout) frees the slot in the transaction that closes it,
// and continue-as-new hands it to the successor, so a crash can neither
// leak nor double one. The dispatcher, woken after such commits and on
// its poll tick, runs one statement in a fenced transaction
// (store.PromoteQueued): per key, the limit less the runs RUNNING is how
// many queued runs turn RUNNING, by priority, then by turn (fairness keys
// take turns), then oldest first, their first workflow task due now;
// the queued runs of a workflow whose limit was removed all run. Only the
// shard owner's dispatcher promotes, so the count cannot race. With no
// run queued, neither a poll tick nor a closing run costs a statement.
package flow

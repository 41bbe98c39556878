// Package engine runs one shard: a PostgreSQL database holding executions,
// their append-only histories and their durable tasks.
//
// An Engine owns its shard through the lease row (harvest_shard_lease).
// Start takes the lease by bumping its epoch under an exclusive advisory
// lock; every write transaction first takes that lock shared, then re-reads
// the epoch and aborts with *OwnershipLostError if a successor has bumped
// it, so a stale owner can never commit. Losing the lease stops every loop
// of the shard at once.
//
// # Shard lifecycle
//
//	stopped ──Start──> leased (loops running) ──Stop──> released (lease free, successors start at once)
//	                       │
//	                       └──epoch bumped by another node──> lost (loops stopped, writes refused)
//
// Invariants:
//   - Idempotency is enforced by PostgreSQL constraints inside one
//     transaction: start claims by the primary key (workflow_name,
//     idempotency_key), signals by the partial unique index
//     (execution_id, idempotency_key), business ids by the partial unique
//     index on (workflow_name, workflow_id) WHERE holds_slot.
//   - Every change to an execution (events, tasks, timers, state) happens
//     under its row lock (SELECT … FOR UPDATE), taken before any task or
//     timer row lock, so event ids stay dense and lock order is fixed.
//   - The pending workflow task is the execution's wf_task_due_at column;
//     a workflow task holds the execution row lock for its whole run, so
//     two tasks of one run never interleave. A run's first task runs in
//     the start batch that creates it (internal/intake/first_task.go), before any other
//     transaction can see the run.
//   - Activities are at-least-once: a claim bumps the attempt and stamps
//     the epoch; a result is accepted only for the attempt that is still
//     running. Tasks claimed under an older epoch are reclaimed at once.
//     A batch that schedules tasks may insert them claimed for its own
//     free activity slots (internal/activity/dispatch.go): the same attempt and epoch rules.
package engine

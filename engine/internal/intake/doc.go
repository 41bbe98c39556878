// Package intake admits the writes that come from outside a shard —
// starts, signals, signal-with-start, cancel and terminate — idempotently:
// a start key or a signal key repeated returns the first answer and
// writes nothing. It holds the start paths (single, group commit, one
// trip, atomic), the replay probes and their caches, placement claims,
// the reuse and conflict policies, admission gates, the start batch's
// first workflow tasks and the signal batch. The engine fills its Deps
// (engine/intake.go) and forwards its exported methods here.
package intake

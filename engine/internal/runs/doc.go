// Package runs is the engine's in-transaction state machine: what a
// transaction does to the runs it has locked, decided without sending
// anything. A Changes gathers a transaction's writes (appended events, one
// update per run, the activity tasks and timers its commands create, the
// cancels, the hand-overs of runs that continue as new, the rows of
// commands that act on other runs, and what closing a run clears), queues
// them on the caller's batch as a handful of multi-row statements of
// package store, and reports what the engine must do once the
// transaction commits (Effects). ApplyTask turns a workflow task's
// commands into changes.
//
// It sits above store and below every service that writes runs
// (docs/design-notes.md, "The engine in layers").
package runs

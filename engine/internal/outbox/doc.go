// Package outbox performs the commands that act on other runs, exactly
// once per command: a keyed signal, a child's keyed start, a child's
// report to its parent, a parent close policy, and the keyed starts of
// schedule fires and deferred items. Its loop claims due rows of
// harvest_outbox, performs each as its Kind does through Deps.Outbound
// and records the definite answers in the source runs; Route is the
// runs.Router that turns a workflow task's commands into its rows.
//
// It sits with the other services above runs, fence and store
// (docs/design-notes.md, "The engine in layers"); only the engine
// imports it, and the engine builds its Table (schedule and deferred add
// their keyed-start kinds through KeyedStart).
package outbox

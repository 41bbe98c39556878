// Package activity runs activity attempts and records their outcomes: the
// activity loop claims due tasks into a bounded set of slots (which direct
// dispatch of new tasks shares), runs each attempt with its timeouts and
// heartbeats, and records its completion (group-committed with the
// workflow tasks it wakes, through wftask), its retry or its failure; an
// attempt may stay open for its task token's holder (async completion);
// HTTP activities call out through the shard's address policy.
//
// It is one of the paths above runs (docs/design-notes.md, "The engine in
// layers"); only the engine imports it.
package activity

// Package read answers the shard's reads of runs: a run, its description
// (pending activities and timers, first events, children), its result
// (a long poll woken by runs.Watch when the run closes), its history
// pages, and lists of runs with counts by state. It writes nothing.
//
// It sits with the other paths above runs (docs/design-notes.md, "The
// engine in layers"); only the engine imports it.
package read

// Package store is the only package of the engine with SQL text: every
// statement the shard owner sends, and the scans of their results, one
// file per table (or per concern that spans tables, such as sweeps and
// the planner's statistics). It decides nothing: callers in the layers
// above choose what to write and pass a Querier — a pool for unfenced
// reads, a fenced transaction (internal/fence) for writes. Statements
// keep the text they had before they moved here, byte for byte, so their
// plans and pg_stat_statements entries stay the same
// (docs/design-notes.md, "The engine in layers").
package store

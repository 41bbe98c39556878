// Package loop is the engine's goroutine plumbing, with no knowledge of
// runs or SQL: the group-commit Batcher that starts, probes, signals and
// activity completions share, the re-armable Wakeup, and the bounded
// two-generation map (Generations) behind the engine's caches. It is the
// engine's lowest layer (docs/design-notes.md, "The engine in layers").
package loop

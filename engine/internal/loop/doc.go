// Package loop is the engine's goroutine plumbing, with no knowledge of
// runs or SQL: the group-commit Batcher that starts, probes, signals and
// activity completions share; the drain loop (Drain) and the poll
// skeleton of the fire loops (Poller); the re-armable Wakeup; the wake
// channels (Bus, Nudge) and the set of loops a commit wakes (Set); the
// crash points' type and test hook (CrashPoint, Crash); and the bounded
// two-generation map (Generations) behind the engine's caches. It is the
// engine's lowest layer (docs/design-notes.md, "The engine in layers").
package loop

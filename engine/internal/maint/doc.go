// Package maint holds the shard's small periodic services, one file each
// (River's internal/maintenance): the timer loop, which fires durable
// timers and workflow timeouts; the delivery of completion callbacks; the
// sweeper of expired start claims, placement redirects and deferred
// items; and the planner statistics of young tables. Each sees only the
// Deps the engine fills for it.
//
// It sits above runs, fence and store (docs/design-notes.md, "The engine
// in layers"); only the engine imports it.
package maint

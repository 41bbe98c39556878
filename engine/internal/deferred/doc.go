// Package deferred runs the shard's deferred starts (migration 017): a
// start under a throttle, debounce or batch policy is recorded by its
// request and started later. It holds the requests' side (Defer, Get,
// List) and the fire loop that closes due items and records each one's
// keyed start as an outbox row. The start itself is an outbox kind the
// engine builds from what this package exports (OutboxKind, FireStart,
// Refused, QueueOutcome): a service of its layer may not import the
// outbox.
//
// It sits with the other services above runs, fence and store
// (docs/design-notes.md, "The engine in layers"); only the engine
// imports it.
package deferred

// Package schedule runs the shard's schedules (migration 013,
// docs/schedules.md): the operator's operations on their definitions,
// the copy of a catalog's definitions, the fire loop that records each
// fire's intent as an outbox row, and the pure time logic (nominal times,
// jitter, fire keys). The fire's keyed start is an outbox kind the engine
// builds from what this package exports (OutboxKind, FireRequest,
// FireStart, Refused): a service of its layer may not import the outbox.
//
// It sits with the other services above runs, fence and store
// (docs/design-notes.md, "The engine in layers"); only the engine
// imports it.
package schedule

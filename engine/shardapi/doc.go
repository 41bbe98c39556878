// Package shardapi is the shard's exported vocabulary: the requests,
// results and values of its operations (StartResult, SignalRequest,
// Execution, Outcome, HistoryPage, Schedule, Deferred, Gate, Placement…),
// the execution states, the start policies and their Parse functions,
// the errors a caller can test for (ErrNotFound, *OwnershipLostError,
// *ConflictError…) and execution ids. It is shared by the engine's façade
// and its internal packages, and by api/, node/ and harvesttest/, in the
// way River's rivertype is: a leaf (layer 0 of docs/design-notes.md, "The
// engine in layers") that imports no engine package.
//
// It holds types, constants and pure functions only. The operations
// named in its comments (Describe, History, List, Query, Defer,
// ClaimPlacement…) and Config are package engine's, which re-exports
// everything here under the same names (engine/aliases.go), so that
// engine.ErrNotFound is shardapi.ErrNotFound and engine.StartResult is
// shardapi.StartResult. StartRequest, SignalWithStartRequest (which holds
// one) and the Outbound interface (whose Start takes one) stay in engine
// for now: StartRequest carries fields the engine resolves as a start
// goes (its due time, timeouts, a prepared first task); the outbox's
// starts are an OutboundStart, which the engine turns into one.
package shardapi

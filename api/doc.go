// Package api is Harvest's whole HTTP surface: the gin handlers under
// /api/harvest (start, signal, signal-with-start, describe, result,
// history, list, cancel, terminate), the health and metrics endpoints, the
// OpenAPI document, and the one JSON error shape every 4xx/5xx answer uses.
//
// Handlers never talk to PostgreSQL themselves: a Router picks the shard
// engine that serves a request. Idempotency rules that are about the HTTP
// request (header beats body or query, empty key is a 400, a replay with a
// header key short-circuits before the body is parsed) live here; the
// dedup itself is the engine's.
package api

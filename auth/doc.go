// Package auth holds Harvest's client credentials: bearer tokens with a
// scope, how they are minted, parsed and verified, and the identity a
// verified request carries.
//
// # Tokens
//
// A token is "hvt_<id>_<secret>": a 16-hex-digit id, which names the
// token in lists, logs (field token_id) and revocations, and a 64-hex-digit
// random secret. Only the SHA-256 of the whole token is stored; the
// secret is random, so a slow key-derivation function would add cost on
// every request and no safety. A token has a Scope, a name and an
// optional expiry, and is revoked by id.
//
// # Scopes
//
// ScopeRead < ScopeWrite < ScopeAdmin: each implies the ones below it.
// Which route needs which scope is declared where the api package
// registers the route.
//
// # Verification
//
// Verifier checks a bearer token against a Source, the token table as
// this node holds it in memory (the raft catalog in a cluster, a table
// loaded from the shard database on a dev node): a verification is one
// SHA-256 and a map lookup, with no I/O on the request path.
package auth

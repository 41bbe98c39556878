package auth

import "errors"

// Errors of token parsing and verification. Every verification failure
// wraps ErrUnauthenticated.
var (
	// ErrUnauthenticated: the request carries no valid credential.
	ErrUnauthenticated = errors.New("unauthenticated")
	// ErrMissing: no bearer token was sent.
	ErrMissing = errors.New("no bearer token")
	// ErrMalformed: the token is not "hvt_<id>_<secret>".
	ErrMalformed = errors.New("malformed token")
	// ErrUnknown: no token with that id and secret, or it was revoked.
	ErrUnknown = errors.New("token not recognised or revoked")
	// ErrExpired: the token's expiry has passed.
	ErrExpired = errors.New("token expired")
	// ErrUnknownScope: a scope name other than read, write or admin.
	ErrUnknownScope = errors.New("unknown scope")
	// ErrStale: this node's token table may be out of date (it has not
	// heard from the catalog leader lately), so it verifies nothing.
	ErrStale = errors.New("this node's token table may be out of date")
)

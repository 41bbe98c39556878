package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/harvestd/harvest/client"
)

// commandScopes is the token scope each command needs on a node started
// with --auth tokens: the scope of the routes it calls (package api
// declares them where it registers each route). TestCommandScopes checks
// that every command is listed.
var commandScopes = map[string]client.TokenScope{
	"workflow start":             client.ScopeWrite,
	"workflow signal":            client.ScopeWrite,
	"workflow update":            client.ScopeWrite,
	"workflow update-with-start": client.ScopeWrite,
	"workflow signal-with-start": client.ScopeWrite,
	"workflow describe":          client.ScopeRead,
	"workflow children":          client.ScopeRead,
	"workflow query":             client.ScopeRead,
	"workflow result":            client.ScopeRead,
	"workflow history":           client.ScopeRead,
	"workflow list":              client.ScopeRead,
	"flow":                       client.ScopeRead,
	"workflow cancel":            client.ScopeWrite,
	"workflow terminate":         client.ScopeAdmin,
	"workflow reset":             client.ScopeAdmin,
	"cluster members":            client.ScopeRead,
	"cluster routing":            client.ScopeRead,
	"cluster peers":              client.ScopeAdmin,
	"cluster remove-peer":        client.ScopeAdmin,
	"shard list":                 client.ScopeAdmin,
	"shard status":               client.ScopeAdmin,
	"shard add":                  client.ScopeAdmin,
	"shard drain":                client.ScopeAdmin,
	"shard undrain":              client.ScopeAdmin,
	"gate close":                 client.ScopeAdmin,
	"gate open":                  client.ScopeAdmin,
	"gate list":                  client.ScopeAdmin,
	"schedule create":            client.ScopeAdmin,
	"schedule list":              client.ScopeRead,
	"schedule describe":          client.ScopeRead,
	"schedule pause":             client.ScopeAdmin,
	"schedule resume":            client.ScopeAdmin,
	"schedule trigger":           client.ScopeWrite,
	"schedule delete":            client.ScopeAdmin,
	"deferred start":             client.ScopeWrite,
	"deferred get":               client.ScopeRead,
	"deferred list":              client.ScopeAdmin,
	"token create":               client.ScopeAdmin,
	"token list":                 client.ScopeAdmin,
	"token revoke":               client.ScopeAdmin,
	"webhook create":             client.ScopeAdmin,
	"webhook list":               client.ScopeAdmin,
	"webhook delete":             client.ScopeAdmin,
	"activity register":          client.ScopeAdmin,
	"activity list":              client.ScopeAdmin,
	"activity delete":            client.ScopeAdmin,
	"limit set":                  client.ScopeAdmin,
	"batch start":                client.ScopeAdmin,
	"batch describe":             client.ScopeRead,
	"batch cancel":               client.ScopeAdmin,
	"limit list":                 client.ScopeAdmin,
	"limit delete":               client.ScopeAdmin,
	"certs create":               "", // local files: no request, no token
	"bench":                      client.ScopeWrite,
}

// neededScope is the scope the command running in c needs, whose name
// (its path from the app) is path. A policy that terminates a running run
// needs admin, and so does bench's signal mode, which terminates its runs
// at the end.
func neededScope(c *cli.Context, path string) client.TokenScope {
	switch {
	case c.String("reuse-policy") == string(client.ReuseTerminateIfRunning),
		c.String("conflict-policy") == string(client.ConflictTerminateExisting),
		path == "bench" && c.String("mode") == benchSignal:
		return client.ScopeAdmin
	}
	return commandScopes[path]
}

// withAuthHint wraps action so that a refused token (401, 403) comes with
// a hint naming --token and the scope the command needs.
func withAuthHint(path string, action cli.ActionFunc) cli.ActionFunc {
	return func(c *cli.Context) error {
		err := action(c)
		if err == nil || !(errors.Is(err, client.ErrUnauthenticated) || errors.Is(err, client.ErrForbidden)) {
			return err
		}
		return hinted{err: err, hint: authHint(err, c.String("token") != "", neededScope(c, path))}
	}
}

// authHint tells what to do about a refused token.
func authHint(err error, sent bool, need client.TokenScope) string {
	fix := "set --token or HARVEST_TOKEN to a token of scope " + scopeOrAbove(need)
	switch {
	case errors.Is(err, client.ErrForbidden):
		return "the token's scope is too low for this: " + fix
	case sent:
		return "the node refused the token (malformed, unknown, revoked or expired): " + fix
	}
	return "the node requires a bearer token: " + fix
}

// scopeOrAbove names the scopes that cover s.
func scopeOrAbove(s client.TokenScope) string {
	switch s {
	case client.ScopeRead:
		return "read (or write, admin)"
	case client.ScopeWrite:
		return "write (or admin)"
	case "":
		return "high enough"
	}
	return string(s)
}

// hinted is an error with advice printed after it.
type hinted struct {
	err  error
	hint string
}

func (h hinted) Error() string { return h.err.Error() }
func (h hinted) Unwrap() error { return h.err }

// printHint prints the hint err carries, if any.
func printHint(stderr io.Writer, err error) {
	var h hinted
	if errors.As(err, &h) {
		fmt.Fprintf(stderr, "hint: %s\n", h.hint)
	}
}

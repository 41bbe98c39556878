package main

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/auth"
	"github.com/harvestd/harvest/demo"
	"github.com/harvestd/harvest/internal/pgtest"
	"github.com/harvestd/harvest/node"
)

// authNodeBundle is a real standalone node with --auth tokens, its tokens
// in its shard database, started with an initial admin token.
type authNodeBundle struct {
	*testBundle
	admin string // the initial admin token
}

func setupAuthNode(t *testing.T) *authNodeBundle {
	t.Helper()
	t.Setenv("HARVEST_TOKEN", "") // only --token sends a token here
	reg := harvest.NewRegistry()
	require.NoError(t, demo.New(demo.NewServices()).Register(reg))
	full, _ := auth.New(auth.Spec{Scope: auth.ScopeAdmin}, time.Now())
	file := filepath.Join(t.TempDir(), "initial-token")
	require.NoError(t, os.WriteFile(file, []byte(full+"\n"), 0o600))
	n, err := node.New(node.Config{
		DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", PostgresDSN: pgtest.NewDB(t),
		Auth:         node.AuthConfig{Mode: node.AuthTokens, InitialTokenFile: file},
		PollInterval: 20 * time.Millisecond, Logger: zerolog.Nop(),
	}, reg)
	require.NoError(t, err)
	require.NoError(t, n.Start(context.Background()))
	t.Cleanup(func() { _ = n.Stop(context.Background()) })
	return &authNodeBundle{testBundle: &testBundle{url: n.Addr()}, admin: full}
}

// as runs the CLI sending token.
func (b *authNodeBundle) as(token string, args ...string) []string {
	return append([]string{"--token", token}, args...)
}

// refused requires the CLI run r to have failed with status and a hint
// that contains hint.
func refused(t *testing.T, r ctlResult, status, hint string) {
	t.Helper()
	require.Equal(t, exitFailure, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	require.Empty(t, r.stdout)
	lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
	require.Len(t, lines, 2, "an error and a hint:\n%s", r.stderr)
	require.Regexp(t, `^error: .+ \(`+status+`\)$`, lines[0])
	require.Equal(t, "hint: "+hint, lines[1])
}

// TestTokenCommands drives token create, list and revoke against a real
// node with tokens on. Subtests run in order and share the tokens.
func TestTokenCommands(t *testing.T) {
	b := setupAuthNode(t)
	var readID, readToken string

	t.Run("TokenIsRequired", func(t *testing.T) {
		refused(t, b.ctl(t, "token", "list"), "unauthenticated, HTTP 401",
			"the node requires a bearer token: set --token or HARVEST_TOKEN to a token of scope admin")
		refused(t, b.ctl(t, "workflow", "list"), "unauthenticated, HTTP 401",
			"the node requires a bearer token: set --token or HARVEST_TOKEN to a token of scope read (or write, admin)")
		refused(t, b.ctl(t, b.as("hvt_nope", "cluster", "routing")...), "unauthenticated, HTTP 401",
			"the node refused the token (malformed, unknown, revoked or expired): set --token or HARVEST_TOKEN to a token of scope read (or write, admin)")
	})

	t.Run("CreateShowsTheTokenOnce", func(t *testing.T) {
		before := time.Now()
		table := b.ok(t, b.as(b.admin, "token", "create", "--scope", "read", "--name", "ci", "--expires-in", "24h")...)
		readToken, readID = cell(t, table, "Token"), cell(t, table, "ID")
		require.True(t, strings.HasPrefix(readToken, "hvt_"+readID+"_"), "token %q of id %s", readToken, readID)
		require.Equal(t, "ci", cell(t, table, "Name"))
		require.Equal(t, "read", cell(t, table, "Scope"))
		require.Equal(t, "active", cell(t, table, "State"))
		expires, err := time.Parse(time.RFC3339, cell(t, table, "Expires"))
		require.NoError(t, err)
		require.WithinRange(t, expires, before.Add(24*time.Hour-time.Second), time.Now().Add(24*time.Hour+time.Second))
		require.Contains(t, table, tokenShownOnce)

		m := b.okJSON(t, b.as(b.admin, "token", "create", "--scope", "write")...)
		require.Equal(t, "write", m["scope"])
		require.Equal(t, "active", m["state"])
		require.True(t, strings.HasPrefix(m["token"].(string), "hvt_"), "json: %v", m)
		require.NotContains(t, m, "expires_at", "no --expires-in: never expires")
	})

	t.Run("ListShowsNoSecret", func(t *testing.T) {
		table := b.ok(t, b.as(b.admin, "token", "list")...)
		require.NotContains(t, table, readToken)
		got := rows(table, readID)
		require.Len(t, got, 1, table)
		require.Equal(t, []string{readID, "ci", "read", "active"}, got[0][:4])
		require.Len(t, rows(table, "ID"), 1, "one header")

		m := b.okJSON(t, b.as(b.admin, "token", "list")...)
		list := m["tokens"].([]any)
		require.Len(t, list, 3, "initial, read and write tokens")
		for _, tok := range list {
			require.NotContains(t, tok, "token", "a list never shows the secret")
		}
	})

	t.Run("ReadTokenReadsButIsForbiddenAdmin", func(t *testing.T) {
		table := b.ok(t, b.as(readToken, "cluster", "routing")...)
		require.Equal(t, "0", cell(t, table, "Placement epoch"))
		refused(t, b.ctl(t, b.as(readToken, "token", "list")...), "forbidden, HTTP 403",
			"the token's scope is too low for this: set --token or HARVEST_TOKEN to a token of scope admin")
		refused(t, b.ctl(t, b.as(readToken, "workflow", "start", "order", "--input-json", orderInput)...), "forbidden, HTTP 403",
			"the token's scope is too low for this: set --token or HARVEST_TOKEN to a token of scope write (or admin)")
	})

	t.Run("RevokeRefusesTheToken", func(t *testing.T) {
		table := b.ok(t, b.as(b.admin, "token", "revoke", readID)...)
		require.Equal(t, readID, cell(t, table, "ID"))
		require.Equal(t, "revoked", cell(t, table, "State"))
		revokedAt := cell(t, table, "Revoked")
		again := b.okJSON(t, b.as(b.admin, "token", "revoke", readID)...)
		require.Equal(t, "revoked", again["state"], "revoking again answers the same")
		require.NotContains(t, again, "token")
		at, err := time.Parse(time.RFC3339, again["revoked_at"].(string))
		require.NoError(t, err)
		require.Equal(t, revokedAt, stamp(at), "the first revocation's time")

		refused(t, b.ctl(t, b.as(readToken, "cluster", "routing")...), "unauthenticated, HTTP 401",
			"the node refused the token (malformed, unknown, revoked or expired): set --token or HARVEST_TOKEN to a token of scope read (or write, admin)")
		listed := rows(b.ok(t, b.as(b.admin, "token", "list")...), readID)
		require.Len(t, listed, 1)
		require.Equal(t, "revoked", listed[0][3])
	})

	t.Run("RevokeUnknownID", func(t *testing.T) {
		r := b.ctl(t, b.as(b.admin, "token", "revoke", "0123456789abcdef")...)
		require.Equal(t, exitFailure, r.code)
		require.Contains(t, r.stderr, "(not_found, HTTP 404)")
		require.NotContains(t, r.stderr, "hint:")
	})

	t.Run("UsageMistakes", func(t *testing.T) {
		for _, args := range [][]string{
			{"token", "create"},
			{"token", "create", "--scope", "root"},
			{"token", "create", "--scope", "read", "--expires-in", "0s"},
			{"token", "revoke"},
		} {
			r := b.ctl(t, b.as(b.admin, args...)...)
			require.Equal(t, exitUsage, r.code, "%v: stderr %s", args, r.stderr)
			require.Empty(t, r.stdout)
		}
		m := b.okJSON(t, b.as(b.admin, "token", "list")...)
		require.Len(t, m["tokens"], 3, "no mistake minted a token")
	})
}

// TestCommandScopes: every command declares the scope its hint names, and
// a policy that terminates a running run asks for admin.
func TestCommandScopes(t *testing.T) {
	app := newApp(nil, nil)
	var leaves []string
	var walk func(path string, cmds []*cli.Command)
	walk = func(path string, cmds []*cli.Command) {
		for _, c := range cmds {
			p := strings.TrimSpace(path + " " + c.Name)
			if len(c.Subcommands) == 0 {
				leaves = append(leaves, p)
			}
			walk(p, c.Subcommands)
		}
	}
	walk("", app.Commands)
	require.ElementsMatch(t, slices.Collect(maps.Keys(commandScopes)), leaves, "commandScopes lists every command, and only those")

	b := setupAuthNode(t)
	t.Run("TerminatingPolicyNeedsAdmin", func(t *testing.T) {
		m := b.okJSON(t, b.as(b.admin, "token", "create", "--scope", "write")...)
		token := m["token"].(string)
		b.ok(t, b.as(token, "workflow", "start", "order", "--workflow-id", "w", "--input-json", `{"order_id":"o"}`)...)
		refused(t, b.ctl(t, b.as(token, "workflow", "start", "order", "--workflow-id", "w", "--reuse-policy", "terminate_if_running")...),
			"forbidden, HTTP 403", "the token's scope is too low for this: set --token or HARVEST_TOKEN to a token of scope admin")
	})
}

package main

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/harvestd/harvest/client"
)

// tokenShownOnce follows a created token in the table output.
const tokenShownOnce = "Store the token now: the node keeps only its hash and never shows it again."

func tokenCommand() *cli.Command {
	return &cli.Command{
		Name:  "token",
		Usage: "create, list and revoke the bearer tokens of a node started with --auth tokens (needs a token of scope admin)",
		Subcommands: []*cli.Command{{
			Name:  "create",
			Usage: "mint a token and print it (shown this once)",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "scope", Usage: "read, write or admin; each implies the ones before it (required)"},
				&cli.StringFlag{Name: "name", Usage: "label shown in token list"},
				&cli.DurationFlag{Name: "expires-in", Usage: "stop verifying after this long, e.g. 24h (default: never)"},
			},
			Action: tokenCreateAction,
		}, {
			Name:   "list",
			Usage:  "list every token, expired and revoked ones included (never their secrets)",
			Action: tokenListAction,
		}, {
			Name:      "revoke",
			Usage:     "revoke a token by id; revoking it again changes nothing",
			ArgsUsage: "<token-id>",
			Action:    tokenRevokeAction,
		}},
	}
}

func tokenCreateAction(c *cli.Context) error {
	s, err := begin(c)
	if err != nil {
		return err
	}
	req, err := tokenRequest(c)
	if err != nil {
		return err
	}
	tok, err := s.api.CreateToken(c.Context, req)
	if err != nil {
		return failed(err)
	}
	return s.emit(tok.Raw, func(tw *tabwriter.Writer) {
		kv(tw, "Token", tok.Secret)
		tokenRows(tw, tok)
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, tokenShownOnce)
	})
}

// tokenRequest reads the flags of token create.
func tokenRequest(c *cli.Context) (client.CreateTokenRequest, error) {
	if err := requireFlag(c, "scope"); err != nil {
		return client.CreateTokenRequest{}, err
	}
	req := client.CreateTokenRequest{Scope: client.TokenScope(c.String("scope")), Name: c.String("name")}
	switch req.Scope {
	case client.ScopeRead, client.ScopeWrite, client.ScopeAdmin:
	default:
		return req, usagef("--scope %q: want read, write or admin", req.Scope)
	}
	if c.IsSet("expires-in") {
		if req.ExpiresIn = c.Duration("expires-in"); req.ExpiresIn <= 0 {
			return req, usagef("--expires-in must be positive")
		}
	}
	return req, nil
}

func tokenListAction(c *cli.Context) error {
	s, err := begin(c)
	if err != nil {
		return err
	}
	tokens, err := s.api.Tokens(c.Context)
	if err != nil {
		return failed(err)
	}
	return emitList(s, "tokens", tokens, func(t client.Token) json.RawMessage { return t.Raw }, tokensTable)
}

func tokenRevokeAction(c *cli.Context) error {
	s, err := begin(c, "token-id")
	if err != nil {
		return err
	}
	tok, err := s.api.RevokeToken(c.Context, s.args[0])
	if err != nil {
		return failed(err)
	}
	return s.emit(tok.Raw, func(tw *tabwriter.Writer) { tokenRows(tw, tok) })
}

// tokenRows shows one token but its secret.
func tokenRows(tw *tabwriter.Writer, t *client.Token) {
	kv(tw, "ID", t.ID)
	kv(tw, "Name", dash(t.Name))
	kv(tw, "Scope", string(t.Scope))
	kv(tw, "State", t.State)
	kv(tw, "Created", stamp(t.CreatedAt))
	kv(tw, "Expires", tokenExpires(*t))
	if t.RevokedAt != nil {
		kv(tw, "Revoked", stamp(*t.RevokedAt))
	}
}

// tokensTable lists tokens in the server's order (oldest first).
func tokensTable(tw *tabwriter.Writer, tokens []client.Token) {
	row(tw, "ID", "NAME", "SCOPE", "STATE", "CREATED", "EXPIRES")
	for _, t := range tokens {
		row(tw, t.ID, dash(t.Name), string(t.Scope), t.State, stamp(t.CreatedAt), tokenExpires(t))
	}
}

func tokenExpires(t client.Token) string {
	if t.ExpiresAt == nil {
		return "never"
	}
	return stamp(*t.ExpiresAt)
}

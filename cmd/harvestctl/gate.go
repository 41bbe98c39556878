package main

import (
	"encoding/json"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/harvestd/harvest/client"
)

func gateCommand() *cli.Command {
	return &cli.Command{
		Name:  "gate",
		Usage: "close, open and list admission gates, which refuse fresh starts (replays, signals and running runs go on)",
		Subcommands: []*cli.Command{{
			Name:  "close",
			Usage: "close a gate: fresh starts in its scope answer 503 admission_blocked",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "scope", Usage: "cluster, workflow_name or shard (required)"},
				&cli.StringFlag{Name: "value", Usage: "the workflow name or shard id the gate covers (not with --scope cluster)"},
				&cli.StringFlag{Name: "reason", Usage: "why, shown to refused callers (required)"},
				&cli.DurationFlag{Name: "expires-in", Usage: "lift the gate by itself after this long (default: until opened)"},
				&cli.StringFlag{Name: "id", Usage: "gate id (default: minted by the server); closing an existing id replaces that gate"},
			},
			Action: gateCloseAction,
		}, {
			Name:      "open",
			Usage:     "lift a gate",
			ArgsUsage: "<gate-id>",
			Action:    gateOpenAction,
		}, {
			Name:   "list",
			Usage:  "list the standing gates",
			Action: gateListAction,
		}},
	}
}

func gateCloseAction(c *cli.Context) error {
	s, err := begin(c)
	if err != nil {
		return err
	}
	if err := requireFlag(c, "scope", "reason"); err != nil {
		return err
	}
	req := client.CloseGateRequest{ID: c.String("id"), ScopeKind: client.GateScope(c.String("scope")), ScopeValue: c.String("value"),
		Reason: c.String("reason")}
	switch req.ScopeKind {
	case client.GateCluster:
		if req.ScopeValue != "" {
			return usagef("--scope cluster takes no --value")
		}
	case client.GateWorkflowName, client.GateShard:
		if req.ScopeValue == "" {
			return usagef("--scope %s needs --value", req.ScopeKind)
		}
	default:
		return usagef("--scope %q: want cluster, workflow_name or shard", req.ScopeKind)
	}
	if c.IsSet("expires-in") {
		d := c.Duration("expires-in")
		if d <= 0 {
			return usagef("--expires-in must be positive")
		}
		req.ExpiresAt = time.Now().Add(d)
	}
	g, err := s.api.CloseGate(c.Context, req)
	if err != nil {
		return failed(err)
	}
	return s.emit(g.Raw, func(tw *tabwriter.Writer) { gateRows(tw, g) })
}

func gateOpenAction(c *cli.Context) error {
	s, err := begin(c, "gate-id")
	if err != nil {
		return err
	}
	id := s.args[0]
	if err := s.api.OpenGate(c.Context, id); err != nil {
		return failed(err)
	}
	raw, err := json.Marshal(map[string]any{"lifted": true, "gate_id": id})
	if err != nil {
		return failed(err)
	}
	return s.emit(raw, func(tw *tabwriter.Writer) { kv(tw, "Lifted gate", id) })
}

func gateListAction(c *cli.Context) error {
	s, err := begin(c)
	if err != nil {
		return err
	}
	gates, err := s.api.Gates(c.Context)
	if err != nil {
		return failed(err)
	}
	return emitList(s, "gates", gates, func(g client.Gate) json.RawMessage { return g.Raw }, gatesTable)
}

// gateRows shows one gate.
func gateRows(tw *tabwriter.Writer, g *client.Gate) {
	kv(tw, "Gate ID", g.ID)
	kv(tw, "Scope", scopeText(*g))
	kv(tw, "Reason", g.Reason)
	kv(tw, "Created", stamp(g.CreatedAt))
	kv(tw, "Expires", expiresText(*g))
}

// gatesTable lists gates in the server's order (oldest first).
func gatesTable(tw *tabwriter.Writer, gates []client.Gate) {
	row(tw, "ID", "SCOPE", "REASON", "CREATED", "EXPIRES")
	for _, g := range gates {
		row(tw, g.ID, scopeText(g), g.Reason, stamp(g.CreatedAt), expiresText(g))
	}
}

func scopeText(g client.Gate) string {
	if g.ScopeValue == "" {
		return string(g.ScopeKind)
	}
	return string(g.ScopeKind) + "=" + g.ScopeValue
}

func expiresText(g client.Gate) string {
	if g.ExpiresAt == nil {
		return "never (until opened)"
	}
	return stamp(*g.ExpiresAt)
}

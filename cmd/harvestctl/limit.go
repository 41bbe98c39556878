package main

import (
	"cmp"
	"encoding/json"
	"strconv"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/harvestd/harvest/client"
)

// rateFlags are the flags of an activity's rate limit.
var rateFlags = []string{"per-second", "burst", "rate-key-pointer"}

func limitCommand() *cli.Command {
	return &cli.Command{
		Name: "limit",
		Usage: "set, list and delete flow control limits at run time; a limit replaces the ones the workflow's or " +
			"activity's code declares (needs a token of scope admin)",
		Subcommands: []*cli.Command{{
			Name: "set",
			Usage: "set the limit of a workflow (--max-running) or an activity (--max-running and/or --per-second), " +
				"replacing any; 0 lifts a limit the code declares",
			ArgsUsage: "workflow|activity <name>",
			Flags: []cli.Flag{
				&cli.IntFlag{Name: "max-running", Usage: "the most runs (an activity's attempts) at once, per key with --key-pointer; 0: none (required for a workflow)"},
				&cli.StringFlag{Name: "key-pointer", Usage: "JSON pointer into the input that keys the concurrency limit, e.g. /customer"},
				&cli.StringFlag{Name: "scope", Usage: "workflows: shard (default: each shard's runs apart) or cluster (every shard's runs of a key together)"},
				&cli.Float64Flag{Name: "per-second", Usage: "activities: attempts a second on average; 0: no rate limit"},
				&cli.IntFlag{Name: "burst", Usage: "activities: the most attempts started at once (0 means 1); needs --per-second"},
				&cli.StringFlag{Name: "rate-key-pointer", Usage: "activities: JSON pointer into the input that keys the rate limit; needs --per-second"},
			},
			Action: limitSetAction,
		}, {
			Name:   "list",
			Usage:  "list the limits set at run time (harvestctl flow shows the limits in force)",
			Action: limitListAction,
		}, {
			Name:      "delete",
			Usage:     "delete a limit set at run time: the limits the code declares apply again",
			ArgsUsage: "workflow|activity <name>",
			Action:    limitDeleteAction,
		}},
	}
}

func limitSetAction(c *cli.Context) error {
	s, err := begin(c, "kind", "name")
	if err != nil {
		return err
	}
	l, err := limitRequest(c, s.args[0], s.args[1])
	if err != nil {
		return err
	}
	got, err := s.api.SetLimit(c.Context, l)
	if err != nil {
		return failed(err)
	}
	return s.emit(got.Raw, func(tw *tabwriter.Writer) { limitRows(tw, got) })
}

// limitRequest reads the flags of limit set for kind and name.
func limitRequest(c *cli.Context, kind, name string) (client.Limit, error) {
	l := client.Limit{Kind: kind, Name: name, MaxRunning: c.Int("max-running"), KeyPointer: c.String("key-pointer"),
		Scope: c.String("scope"), PerSecond: c.Float64("per-second"), Burst: c.Int("burst"), RateKeyPointer: c.String("rate-key-pointer")}
	switch kind {
	case client.LimitWorkflow:
		for _, f := range rateFlags {
			if c.IsSet(f) {
				return l, usagef("--%s limits activities, not workflows", f)
			}
		}
		if !c.IsSet("max-running") {
			return l, usagef("%s: a workflow's limit needs --max-running (0 lifts the declared one)", c.Command.HelpName)
		}
	case client.LimitActivity:
		if !c.IsSet("max-running") && !c.IsSet("per-second") {
			return l, usagef("%s: an activity's limit needs --max-running, --per-second or both (0 lifts the declared one)", c.Command.HelpName)
		}
	default:
		return l, usagef("kind %q: want %s or %s", kind, client.LimitWorkflow, client.LimitActivity)
	}
	return l, nil
}

func limitListAction(c *cli.Context) error {
	s, err := begin(c)
	if err != nil {
		return err
	}
	list, err := s.api.Limits(c.Context)
	if err != nil {
		return failed(err)
	}
	return emitList(s, "limits", list, func(l client.Limit) json.RawMessage { return l.Raw }, limitsTable)
}

func limitDeleteAction(c *cli.Context) error {
	s, err := begin(c, "kind", "name")
	if err != nil {
		return err
	}
	kind, name := s.args[0], s.args[1]
	if kind != client.LimitWorkflow && kind != client.LimitActivity {
		return usagef("kind %q: want %s or %s", kind, client.LimitWorkflow, client.LimitActivity)
	}
	if err := s.api.DeleteLimit(c.Context, kind, name); err != nil {
		return failed(err)
	}
	raw, _ := json.Marshal(map[string]any{"kind": kind, "name": name, "deleted": true})
	return s.emit(raw, func(tw *tabwriter.Writer) { kv(tw, "Deleted", kind+" "+name) })
}

// limitCells are a limit's numbers as the tables show them: "-" for no
// limit.
func limitCells(l client.Limit) (maxRunning, perSecond, burst string) {
	maxRunning, perSecond, burst = "-", "-", "-"
	if l.MaxRunning > 0 {
		maxRunning = strconv.Itoa(l.MaxRunning)
	}
	if l.PerSecond > 0 {
		perSecond, burst = strconv.FormatFloat(l.PerSecond, 'g', -1, 64), strconv.Itoa(max(l.Burst, 1))
	}
	return maxRunning, perSecond, burst
}

// limitRows shows one limit.
func limitRows(tw *tabwriter.Writer, l *client.Limit) {
	maxRunning, perSecond, burst := limitCells(*l)
	kv(tw, "Kind", l.Kind)
	kv(tw, "Name", l.Name)
	kv(tw, "Max running", maxRunning)
	kv(tw, "Key pointer", dash(l.KeyPointer))
	if l.Kind == client.LimitWorkflow {
		kv(tw, "Scope", scopeCell(*l))
	}
	if l.Kind == client.LimitActivity {
		kv(tw, "Per second", perSecond)
		kv(tw, "Burst", burst)
		kv(tw, "Rate key pointer", dash(l.RateKeyPointer))
	}
	kv(tw, "Updated", stamp(l.UpdatedAt))
}

// scopeCell is a workflow limit's scope ("-" for an activity's).
func scopeCell(l client.Limit) string {
	if l.Kind != client.LimitWorkflow {
		return "-"
	}
	return cmp.Or(l.Scope, "shard")
}

// limitsTable lists limits by kind, then name.
func limitsTable(tw *tabwriter.Writer, list []client.Limit) {
	row(tw, "KIND", "NAME", "MAX RUNNING", "KEY POINTER", "SCOPE", "PER SECOND", "BURST", "RATE KEY POINTER", "UPDATED")
	for _, l := range list {
		maxRunning, perSecond, burst := limitCells(l)
		row(tw, l.Kind, l.Name, maxRunning, dash(l.KeyPointer), scopeCell(l), perSecond, burst, dash(l.RateKeyPointer), stamp(l.UpdatedAt))
	}
}

package main

import (
	"encoding/json"
	"strconv"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/harvestd/harvest/client"
)

func deferredCommand() *cli.Command {
	return &cli.Command{
		Name:  "deferred",
		Usage: "throttled, debounced and batched starts: start one, read one, list the pending ones",
		Subcommands: []*cli.Command{{
			Name:      "start",
			Usage:     "a deferred start: exactly one of --batch-key, --debounce-key and --throttle-key (answers the item, not a run)",
			ArgsUsage: "<workflow-name>",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "input-json", Usage: "the start's input"},
				&cli.StringFlag{Name: "workflow-id", Usage: "the run's workflow id (not with --batch-key)"},
				&cli.StringFlag{Name: "batch-key", Usage: "batch: one run with the list of the inputs"},
				&cli.IntFlag{Name: "max-size", Usage: "batch: fire at this many starts (default 100)"},
				&cli.DurationFlag{Name: "max-wait", Usage: "batch or debounce: fire this long after the first start at the latest"},
				&cli.StringFlag{Name: "debounce-key", Usage: "debounce: one run with the last input once the key is quiet"},
				&cli.DurationFlag{Name: "window", Usage: "debounce: how long the key must be quiet (required)"},
				&cli.StringFlag{Name: "throttle-key", Usage: "throttle: pace the key's starts"},
				&cli.IntFlag{Name: "rate", Usage: "throttle: starts per --per (required)"},
				&cli.DurationFlag{Name: "per", Usage: "throttle: the rate's period (default 1s)"},
				&cli.IntFlag{Name: "max-backlog", Usage: "throttle: waiting starts before 429 (default 1000)"},
			},
			Action: deferredStartAction,
		}, {
			Name:      "get",
			Usage:     "a deferred start: pending, firing, started (its run) or failed (why)",
			ArgsUsage: "<deferred-id>",
			Action:    deferredGetAction,
		}, {
			Name:   "list",
			Usage:  "every shard's deferred starts not started yet, the soonest first",
			Action: deferredListAction,
		}},
	}
}

func deferredStartAction(c *cli.Context) error {
	s, err := begin(c, "workflow-name")
	if err != nil {
		return err
	}
	req := client.DeferredStartRequest{WorkflowID: c.String("workflow-id")}
	if c.IsSet("input-json") {
		in := json.RawMessage(c.String("input-json"))
		if !json.Valid(in) {
			return usagef("--input-json: not valid JSON")
		}
		req.Input = in
	}
	set := 0
	if k := c.String("batch-key"); k != "" {
		set++
		req.Batch = &client.Batch{Key: k, MaxSize: c.Int("max-size"), MaxWait: client.Duration(c.Duration("max-wait"))}
	}
	if k := c.String("debounce-key"); k != "" {
		set++
		req.Debounce = &client.Debounce{Key: k, Window: client.Duration(c.Duration("window")), MaxWait: client.Duration(c.Duration("max-wait"))}
	}
	if k := c.String("throttle-key"); k != "" {
		set++
		req.Throttle = &client.Throttle{Key: k, Rate: c.Int("rate"), Per: client.Duration(c.Duration("per")), MaxBacklog: c.Int("max-backlog")}
	}
	if set != 1 {
		return usagef("give exactly one of --batch-key, --debounce-key and --throttle-key")
	}
	d, err := s.api.StartDeferred(c.Context, s.args[0], req)
	if err != nil {
		return failed(err)
	}
	return s.emit(d.Raw, func(tw *tabwriter.Writer) { deferredRows(tw, d) })
}

func deferredGetAction(c *cli.Context) error {
	s, err := begin(c, "deferred-id")
	if err != nil {
		return err
	}
	d, err := s.api.DeferredStart(c.Context, s.args[0])
	if err != nil {
		return failed(err)
	}
	return s.emit(d.Raw, func(tw *tabwriter.Writer) { deferredRows(tw, d) })
}

func deferredListAction(c *cli.Context) error {
	s, err := begin(c)
	if err != nil {
		return err
	}
	list, err := s.api.PendingDeferred(c.Context)
	if err != nil {
		return failed(err)
	}
	return emitList(s, "deferred", list, func(d client.Deferred) json.RawMessage { return d.Raw }, deferredTable)
}

// deferredRows shows one deferred start.
func deferredRows(tw *tabwriter.Writer, d *client.Deferred) {
	kv(tw, "Deferred ID", d.ID)
	kv(tw, "Policy", d.Policy+" "+d.Key)
	kv(tw, "Workflow", d.WorkflowName)
	kv(tw, "State", d.State)
	kv(tw, "Starts", strconv.Itoa(d.Starts))
	kv(tw, "Fires", stamp(d.FireAt))
	if d.ExecutionID != "" {
		kv(tw, "Execution ID", d.ExecutionID)
	}
	if d.Reason != "" {
		kv(tw, "Reason", d.Reason)
	}
}

// deferredTable lists deferred starts, the soonest first.
func deferredTable(tw *tabwriter.Writer, list []client.Deferred) {
	row(tw, "ID", "POLICY", "KEY", "WORKFLOW", "STATE", "STARTS", "FIRES")
	for _, d := range list {
		row(tw, d.ID, d.Policy, d.Key, d.WorkflowName, d.State, strconv.Itoa(d.Starts), stamp(d.FireAt))
	}
}

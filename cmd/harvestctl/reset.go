package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/harvestd/harvest/client"
)

func resetCommand() *cli.Command {
	return &cli.Command{
		Name:      "reset",
		Usage:     "replace a run by a new run that replays its history up to a point, then runs the current code",
		ArgsUsage: "<execution-id>",
		Description: `The point is --event-id N (an event that closes no run and is not followed by a
command of its workflow task), or --point first (the first task runs again) or
--point last_task (the last task runs again). The signals the run received after
the point are applied again, with their keys. Activities completed before the
point are not run again; those after it run with the idempotency keys they had.
The chain's current run is terminated when it runs. A repeated --idempotency-key
answers the first reset's run.`,
		Flags: []cli.Flag{
			&cli.Int64Flag{Name: "event-id", Usage: "the last event the new run replays"},
			&cli.StringFlag{Name: "point", Usage: "first or last_task (instead of --event-id)"},
			&cli.StringFlag{Name: "idempotency-key", Usage: "the reset's key (default: a fresh one)"},
			reasonFlag(),
		},
		Action: resetAction,
	}
}

func resetAction(c *cli.Context) error {
	s, err := begin(c, "execution-id")
	if err != nil {
		return err
	}
	o := client.ResetOptions{Point: c.String("point"), Reason: c.String("reason"), IdempotencyKey: c.String("idempotency-key")}
	if c.IsSet("event-id") {
		n := c.Int64("event-id")
		o.EventID = &n
	}
	if (o.EventID == nil) == (o.Point == "") {
		return usagef("give one of --event-id and --point")
	}
	res, err := s.api.Reset(c.Context, s.args[0], o)
	if err != nil {
		return failed(err)
	}
	return s.emit(res.Raw, func(tw *tabwriter.Writer) {
		kv(tw, "Execution ID", res.ExecutionID)
		kv(tw, "Workflow ID", res.WorkflowID)
		kv(tw, "Reset from", fmt.Sprintf("%s, event %d", res.ResetFrom, res.EventID))
		kv(tw, "Replaced", res.ReplacedExecutionID)
		kv(tw, "Terminated", fmt.Sprint(res.Terminated))
		kv(tw, "Newly reset", fmt.Sprint(res.NewlyReset))
	})
}

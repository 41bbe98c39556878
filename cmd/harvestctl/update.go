package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/urfave/cli/v2"
)

// updateWaitDefault is the default --wait of "workflow update".
const updateWaitDefault = 10 * time.Second

func updateCommand() *cli.Command {
	return &cli.Command{
		Name: "update",
		Usage: "send a run an update and show its handler's answer (exit code 1 when the handler failed, " +
			"3 when it did not answer within --wait: run it again with the same --update-id)",
		ArgsUsage: "<execution-id> <update>",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "args-json", Usage: "the update's arguments as JSON (default: none)"},
			&cli.StringFlag{Name: "update-id", Usage: "the update's id: a run applies it once, and a repeat gets its first answer (default: a fresh one, printed)"},
			&cli.DurationFlag{Name: "wait", Value: updateWaitDefault, Usage: "how long to wait for the answer (the server caps it)"},
		},
		Action: updateAction,
	}
}

func updateAction(c *cli.Context) error {
	s, err := begin(c, "execution-id", "update")
	if err != nil {
		return err
	}
	args, err := jsonFlag(c, "args-json")
	if err != nil {
		return err
	}
	id := c.String("update-id")
	if id == "" {
		id = uuid.NewString()
	}
	var updateArgs any
	if args != nil {
		updateArgs = args
	}
	res, err := s.api.UpdateIdempotent(c.Context, s.args[0], s.args[1], id, updateArgs, c.Duration("wait"))
	if err != nil {
		return failed(err)
	}
	if err := s.emit(res.Raw, func(tw *tabwriter.Writer) {
		kv(tw, "Update ID", res.UpdateID)
		kv(tw, "Execution ID", res.ExecutionID)
		kv(tw, "Outcome", res.Outcome)
		if res.Result != nil {
			kv(tw, "Result", jsonCell(res.Result, 0))
		}
		if res.Error != nil {
			kv(tw, "Error", res.Error.Message)
		}
	}); err != nil {
		return err
	}
	switch res.Outcome {
	case "accepted":
		return stillRunning{fmt.Sprintf("update %s was accepted and not answered within %s", id, c.Duration("wait"))}
	case "failed":
		return failed(fmt.Errorf("update %s failed: %s", id, res.Error.Message))
	}
	return nil
}

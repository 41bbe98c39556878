package main

import (
	"cmp"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/urfave/cli/v2"

	"github.com/harvestd/harvest/client"
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
	args, err := jsonFlagValue(c, "args-json")
	if err != nil {
		return err
	}
	id := cmp.Or(c.String("update-id"), uuid.NewString())
	res, err := s.api.UpdateIdempotent(c.Context, s.args[0], s.args[1], id, args, c.Duration("wait"))
	if err != nil {
		return failed(err)
	}
	return showUpdate(c, s, res, nil)
}

// showUpdate prints an update's answer (and more's rows), and gives the
// exit code of its outcome.
func showUpdate(c *cli.Context, s *session, res *client.UpdateResponse, more func(tw *tabwriter.Writer)) error {
	id := res.UpdateID
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
		if more != nil {
			more(tw)
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

func updateWithStartCommand() *cli.Command {
	return &cli.Command{
		Name: "update-with-start",
		Usage: "send an update to the run holding a workflow id, starting one if none is running; " +
			"the exit codes are update's",
		ArgsUsage: "<workflow-name> <update>",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "workflow-id", Usage: "business id to update or start (required)"},
			&cli.StringFlag{Name: "args-json", Usage: "the update's arguments as JSON (default: none)"},
			&cli.StringFlag{Name: "input-json", Usage: "input of a started run as JSON"},
			&cli.StringFlag{Name: "update-id", Usage: "the update's id, which also keys the start: a repeat finds the same run and gets the first answer (default: a fresh one, printed)"},
			reusePolicyFlag(),
			&cli.StringFlag{Name: "queue", Usage: "task queue of a started run"},
			&cli.DurationFlag{Name: "wait", Value: updateWaitDefault, Usage: "how long to wait for the answer (the server caps it)"},
		},
		Action: updateWithStartAction,
	}
}

func updateWithStartAction(c *cli.Context) error {
	s, err := begin(c, "workflow-name", "update")
	if err != nil {
		return err
	}
	if err := requireFlag(c, "workflow-id"); err != nil {
		return err
	}
	req := client.UpdateWithStartRequest{WorkflowID: c.String("workflow-id"), UpdateName: s.args[1], UpdateID: c.String("update-id"),
		Queue: c.String("queue"), ReusePolicy: client.ReusePolicy(c.String("reuse-policy")), Wait: c.Duration("wait")}
	req.UpdateID = cmp.Or(req.UpdateID, uuid.NewString())
	if req.Args, err = jsonFlagValue(c, "args-json"); err != nil {
		return err
	}
	if req.Input, err = jsonFlagValue(c, "input-json"); err != nil {
		return err
	}
	res, err := s.api.UpdateWithStart(c.Context, s.args[0], req)
	if err != nil {
		return failed(err)
	}
	return showUpdate(c, s, &res.UpdateResponse, func(tw *tabwriter.Writer) {
		kv(tw, "Workflow ID", res.WorkflowID)
		kv(tw, "Started fresh", fmt.Sprint(res.StartedFresh))
	})
}

// jsonFlagValue is the JSON of flag name, or nil (no value) when unset.
func jsonFlagValue(c *cli.Context, name string) (any, error) {
	v, err := jsonFlag(c, name)
	if err != nil || v == nil {
		return nil, err
	}
	return v, nil
}

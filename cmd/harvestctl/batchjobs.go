package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/harvestd/harvest/client"
)

// batchPoll is how often --follow reads a job's progress.
const batchPoll = 500 * time.Millisecond

func batchCommand() *cli.Command {
	return &cli.Command{
		Name:  "batch",
		Usage: "terminate, cancel, signal or reset every run a filter matches, as one tracked job",
		Subcommands: []*cli.Command{
			{
				Name:  "start",
				Usage: "start a batch job (scope admin); --follow shows its progress until it ends",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "operation", Usage: "terminate, cancel, signal or reset (required)"},
					&cli.StringFlag{Name: "workflow-name", Usage: "the runs of this workflow (required)"},
					&cli.StringFlag{Name: "workflow-id-prefix", Usage: "only runs whose business id starts with this"},
					&cli.StringSliceFlag{Name: "state", Usage: "only runs in this state (repeatable; default: every state)"},
					&cli.StringFlag{Name: "started-after", Usage: "only runs started at or after this RFC 3339 time"},
					&cli.StringFlag{Name: "started-before", Usage: "only runs started before this RFC 3339 time (default: now)"},
					&cli.StringFlag{Name: "reason", Usage: "the terminate's, cancel's or reset's reason"},
					&cli.StringFlag{Name: "signal", Usage: "the signal to send (operation signal)"},
					&cli.StringFlag{Name: "signal-payload-json", Usage: "the signal's payload as JSON"},
					&cli.StringFlag{Name: "reset-point", Usage: "first or last_task (operation reset)"},
					&cli.Float64Flag{Name: "rate", Usage: "operations a second (server default 50)"},
					idempotencyKeyFlag("the job's key: a repeat finds the same job (default: a fresh one)"),
					&cli.BoolFlag{Name: "follow", Usage: "show the job's progress until it ends"},
				},
				Action: batchStartAction,
			},
			{Name: "describe", Usage: "show a batch job's state and progress", ArgsUsage: "<batch-id>", Action: batchDescribeAction},
			{Name: "cancel", Usage: "stop a batch job after the page in flight (scope admin)", ArgsUsage: "<batch-id>", Action: batchCancelAction},
		},
	}
}

func batchStartAction(c *cli.Context) error {
	s, err := begin(c)
	if err != nil {
		return err
	}
	req, err := batchRequest(c)
	if err != nil {
		return err
	}
	res, err := s.api.CreateBatchJob(c.Context, req)
	if err != nil {
		return failed(err)
	}
	if !c.Bool("follow") {
		raw, _ := json.Marshal(res)
		return s.emit(raw, func(tw *tabwriter.Writer) {
			kv(tw, "Batch ID", res.BatchID)
			kv(tw, "Idempotency key", res.IdempotencyKey)
			kv(tw, "Created", fmt.Sprint(res.Created))
		})
	}
	return followBatch(c, s, res.BatchID)
}

// batchRequest reads the start flags.
func batchRequest(c *cli.Context) (client.BatchJobRequest, error) {
	if err := requireFlag(c, "operation", "workflow-name"); err != nil {
		return client.BatchJobRequest{}, err
	}
	req := client.BatchJobRequest{Operation: c.String("operation"), Reason: c.String("reason"), SignalName: c.String("signal"),
		ResetPoint: c.String("reset-point"), Rate: c.Float64("rate"), IdempotencyKey: c.String("idempotency-key"),
		Filter: client.BatchFilter{WorkflowName: c.String("workflow-name"), WorkflowIDPrefix: c.String("workflow-id-prefix"),
			States: c.StringSlice("state")}}
	var err error
	if req.SignalPayload, err = jsonFlag(c, "signal-payload-json"); err != nil {
		return req, err
	}
	if req.Filter.StartedAfter, err = timePtrFlag(c, "started-after"); err != nil {
		return req, err
	}
	req.Filter.StartedBefore, err = timePtrFlag(c, "started-before")
	return req, err
}

// timePtrFlag is the RFC 3339 time of flag name, or nil when unset.
func timePtrFlag(c *cli.Context, name string) (*time.Time, error) {
	t, err := timeFlag(c, name)
	if err != nil || t.IsZero() {
		return nil, err
	}
	return &t, nil
}

// followBatch draws the job's progress bar on stderr until the job ends,
// then shows the job; a stopped or failed job exits 1.
func followBatch(c *cli.Context, s *session, id string) error {
	tick := time.NewTicker(batchPoll)
	defer tick.Stop()
	for {
		job, err := s.api.BatchJob(c.Context, id)
		if err != nil {
			return failed(err)
		}
		fmt.Fprintf(c.App.ErrWriter, "\r%s", progressBar(job.Progress))
		if job.State != "running" {
			fmt.Fprintln(c.App.ErrWriter)
			return showBatch(s, job)
		}
		select {
		case <-c.Context.Done():
			return failed(c.Context.Err())
		case <-tick.C:
		}
	}
}

// progressBar is a job's progress as one line: its pages as a bar (a
// job does not know its total until its last page), then its counts.
func progressBar(p client.BatchProgress) string {
	const width = 20
	filled := int(p.Pages % (width + 1))
	if p.Finished {
		filled = width
	}
	return fmt.Sprintf("[%s%s] matched %d: done %d, skipped %d, failed %d", strings.Repeat("#", filled), strings.Repeat(".", width-filled),
		p.Matched, p.Done, p.Skipped, p.Failed)
}

func batchDescribeAction(c *cli.Context) error {
	s, err := begin(c, "batch-id")
	if err != nil {
		return err
	}
	job, err := s.api.BatchJob(c.Context, s.args[0])
	if err != nil {
		return failed(err)
	}
	return showBatch(s, job)
}

// showBatch prints a job; a stopped or failed job exits 1.
func showBatch(s *session, job *client.BatchJob) error {
	if err := s.emit(job.Raw, func(tw *tabwriter.Writer) {
		kv(tw, "Batch ID", job.BatchID)
		kv(tw, "State", job.State)
		kv(tw, "Operation", job.Operation)
		kv(tw, "Workflow", job.Filter.WorkflowName)
		kv(tw, "Rate", fmt.Sprintf("%g/s", job.Rate))
		kv(tw, "Matched", fmt.Sprint(job.Progress.Matched))
		kv(tw, "Done", fmt.Sprint(job.Progress.Done))
		kv(tw, "Skipped", fmt.Sprint(job.Progress.Skipped))
		kv(tw, "Failed", fmt.Sprint(job.Progress.Failed))
		if job.Progress.LastError != "" {
			kv(tw, "Last error", job.Progress.LastError)
		}
	}); err != nil {
		return err
	}
	if job.State == "stopped" || job.State == "failed" {
		return failed(fmt.Errorf("batch job %s %s", job.BatchID, job.State))
	}
	return nil
}

func batchCancelAction(c *cli.Context) error {
	s, err := begin(c, "batch-id")
	if err != nil {
		return err
	}
	if err := s.api.CancelBatchJob(c.Context, s.args[0]); err != nil {
		return failed(err)
	}
	fmt.Fprintf(c.App.Writer, "batch job %s: stop requested (it ends after the page in flight)\n", s.args[0])
	return nil
}

package main

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/harvestd/harvest/client"
)

func scheduleCommand() *cli.Command {
	id := func(name, usage string, action cli.ActionFunc) *cli.Command {
		return &cli.Command{Name: name, Usage: usage, ArgsUsage: "<schedule-id>", Action: action}
	}
	return &cli.Command{
		Name:  "schedule",
		Usage: "create, inspect and control schedules: a workflow started exactly once at each nominal time (docs/schedules.md)",
		Subcommands: []*cli.Command{{
			Name:      "create",
			Usage:     "create a schedule of a cron expression (with --time-zone) or an --interval",
			ArgsUsage: "<schedule-id>",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "workflow", Usage: "workflow name the schedule starts (required)"},
				&cli.StringFlag{Name: "workflow-id", Usage: "workflow id of the runs (default: the schedule id)"},
				&cli.StringFlag{Name: "input-json", Usage: "the runs' input as JSON"},
				&cli.StringFlag{Name: "cron", Usage: `five-field cron expression, e.g. "0 2 * * *"`},
				&cli.StringFlag{Name: "time-zone", Usage: "IANA time zone of the cron expression (default UTC)"},
				&cli.DurationFlag{Name: "interval", Usage: "fire every interval (instead of --cron)"},
				&cli.DurationFlag{Name: "offset", Usage: "offset of the interval's fires from the Unix epoch"},
				&cli.StringFlag{Name: "overlap", Value: client.OverlapSkip, Usage: "skip, buffer_one or allow_all"},
				&cli.DurationFlag{Name: "catch-up-window", Usage: "how late a fire missed while down still starts (default 1h)"},
				&cli.DurationFlag{Name: "jitter", Usage: "delay each fire by a deterministic amount below this"},
				&cli.TimestampFlag{Name: "end", Layout: time.RFC3339, Usage: "last nominal time to fire (RFC 3339)"},
				&cli.BoolFlag{Name: "paused", Usage: "create the schedule paused"},
			},
			Action: scheduleCreateAction,
		}, {
			Name:   "list",
			Usage:  "list the schedules with their next fire times",
			Action: scheduleListAction,
		},
			id("describe", "show a schedule, its next fire times and its recent fires", scheduleDescribeAction),
			id("pause", "pause a schedule", scheduleChangeAction((*client.Client).PauseSchedule)),
			id("resume", "resume a paused schedule from now (what passed while paused is not caught up)",
				scheduleChangeAction((*client.Client).ResumeSchedule)),
			{Name: "trigger", Usage: "fire a schedule now, under its overlap policy", ArgsUsage: "<schedule-id>",
				Flags: []cli.Flag{&cli.StringFlag{Name: "idempotency-key",
					Usage: "a key of this trigger: repeating the command with it fires once (and reports the first fire)"}},
				Action: scheduleTriggerAction},
			id("delete", "delete a schedule", scheduleDeleteAction),
		},
	}
}

func scheduleCreateAction(c *cli.Context) error {
	s, err := begin(c, "schedule-id")
	if err != nil {
		return err
	}
	if err := requireFlag(c, "workflow"); err != nil {
		return err
	}
	if c.IsSet("cron") == c.IsSet("interval") {
		return usagef("give one of --cron and --interval")
	}
	input, err := jsonFlag(c, "input-json")
	if err != nil {
		return err
	}
	req := client.ScheduleRequest{ID: s.args[0], WorkflowName: c.String("workflow"), WorkflowID: c.String("workflow-id"),
		Cron: c.String("cron"), TimeZone: c.String("time-zone"), Interval: client.Duration(c.Duration("interval")),
		Offset: client.Duration(c.Duration("offset")), Overlap: c.String("overlap"),
		CatchUpWindow: client.Duration(c.Duration("catch-up-window")), Jitter: client.Duration(c.Duration("jitter")),
		EndAt: c.Timestamp("end"), Paused: c.Bool("paused")}
	if input != nil {
		req.Input = input
	}
	sc, err := s.api.CreateSchedule(c.Context, req)
	if err != nil {
		return failed(err)
	}
	return s.emit(sc.Raw, func(tw *tabwriter.Writer) { scheduleRows(tw, sc) })
}

func scheduleListAction(c *cli.Context) error {
	s, err := begin(c)
	if err != nil {
		return err
	}
	list, err := s.api.Schedules(c.Context)
	if err != nil {
		return failed(err)
	}
	return emitList(s, "schedules", list, func(sc client.Schedule) json.RawMessage { return sc.Raw }, schedulesTable)
}

func scheduleDescribeAction(c *cli.Context) error {
	s, err := begin(c, "schedule-id")
	if err != nil {
		return err
	}
	sc, err := s.api.DescribeSchedule(c.Context, s.args[0])
	if err != nil {
		return failed(err)
	}
	return s.emit(sc.Raw, func(tw *tabwriter.Writer) {
		scheduleRows(tw, sc)
		firesTable(tw, sc.RecentFires)
	})
}

// scheduleChangeAction pauses or resumes the schedule.
func scheduleChangeAction(change func(*client.Client, context.Context, string) (*client.Schedule, error)) cli.ActionFunc {
	return func(c *cli.Context) error {
		s, err := begin(c, "schedule-id")
		if err != nil {
			return err
		}
		sc, err := change(s.api, c.Context, s.args[0])
		if err != nil {
			return failed(err)
		}
		return s.emit(sc.Raw, func(tw *tabwriter.Writer) { scheduleRows(tw, sc) })
	}
}

func scheduleTriggerAction(c *cli.Context) error {
	s, err := begin(c, "schedule-id")
	if err != nil {
		return err
	}
	fire, dup, err := s.api.TriggerScheduleKeyed(c.Context, s.args[0], c.String("idempotency-key"))
	if err != nil {
		return failed(err)
	}
	raw, err := json.Marshal(map[string]any{"schedule_id": s.args[0], "fire": fire, "deduplicated": dup})
	if err != nil {
		return failed(err)
	}
	return s.emit(raw, func(tw *tabwriter.Writer) {
		kv(tw, "Fire key", fire.Key)
		if dup {
			kv(tw, "Deduplicated", "yes: the first trigger with this key")
		}
		kv(tw, "Outcome", fire.Outcome)
		kv(tw, "Reason", fire.Reason)
		kv(tw, "Workflow ID", fire.WorkflowID)
	})
}

func scheduleDeleteAction(c *cli.Context) error {
	s, err := begin(c, "schedule-id")
	if err != nil {
		return err
	}
	if err := s.api.DeleteSchedule(c.Context, s.args[0]); err != nil {
		return failed(err)
	}
	raw, err := json.Marshal(map[string]any{"ok": true, "schedule_id": s.args[0]})
	if err != nil {
		return failed(err)
	}
	return s.emit(raw, func(tw *tabwriter.Writer) { kv(tw, "Deleted schedule", s.args[0]) })
}

// scheduleRows shows one schedule.
func scheduleRows(tw *tabwriter.Writer, sc *client.Schedule) {
	kv(tw, "Schedule ID", sc.ID)
	kv(tw, "Generation", strconv.FormatInt(sc.Generation, 10))
	kv(tw, "Workflow", sc.WorkflowName)
	kv(tw, "When", whenText(*sc))
	kv(tw, "Overlap", sc.Overlap)
	kv(tw, "Catch-up window", sc.CatchUpWindow)
	if sc.Jitter != "" {
		kv(tw, "Jitter", sc.Jitter)
	}
	if sc.EndAt != nil {
		kv(tw, "Ends", stamp(*sc.EndAt))
	}
	kv(tw, "Paused", yesNo(sc.Paused))
	kv(tw, "Cursor", stamp(sc.Cursor))
	kv(tw, "Next fires", nextText(sc.NextFires, len(sc.NextFires)))
}

// schedulesTable lists schedules by id.
func schedulesTable(tw *tabwriter.Writer, list []client.Schedule) {
	row(tw, "ID", "WORKFLOW", "WHEN", "OVERLAP", "PAUSED", "NEXT FIRE")
	for _, sc := range list {
		row(tw, sc.ID, sc.WorkflowName, whenText(sc), sc.Overlap, yesNo(sc.Paused), nextText(sc.NextFires, 1))
	}
}

// firesTable lists recent fires, newest first.
func firesTable(tw *tabwriter.Writer, fires []client.ScheduleFire) {
	if len(fires) == 0 {
		return
	}
	row(tw, "")
	row(tw, "NOMINAL TIME", "OUTCOME", "RUN", "REASON")
	for _, f := range fires {
		outcome := f.Outcome
		if f.Triggered {
			outcome += " (triggered)"
		}
		row(tw, stamp(f.NominalTime), outcome, f.ExecutionID, f.Reason)
	}
}

func whenText(sc client.Schedule) string {
	if sc.Cron == "" {
		when := "every " + sc.Interval
		if sc.Offset != "" {
			when += " +" + sc.Offset
		}
		return when
	}
	if sc.TimeZone == "" {
		return "cron " + sc.Cron + " (UTC)"
	}
	return "cron " + sc.Cron + " (" + sc.TimeZone + ")"
}

func nextText(next []time.Time, n int) string {
	if len(next) == 0 {
		return "none (ended)"
	}
	out := make([]string, 0, n)
	for _, t := range next[:min(n, len(next))] {
		out = append(out, stamp(t))
	}
	return strings.Join(out, ", ")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

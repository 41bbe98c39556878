package main

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/harvestd/harvest/client"
)

// drainPollDefault is the default --poll of "shard drain --wait".
const drainPollDefault = 2 * time.Second

func shardCommand() *cli.Command {
	return &cli.Command{
		Name:  "shard",
		Usage: "inspect and change the raft shard catalog (nodes started with raft flags)",
		Subcommands: []*cli.Command{{
			Name:   "list",
			Usage:  "list the shards and what each still holds inside the idempotency window",
			Action: shardListAction,
		}, {
			Name:      "status",
			Usage:     "show one shard, what it still holds inside the window and when the window passes",
			ArgsUsage: "<shard-id>",
			Action:    shardAction(shardStatus),
		}, {
			Name:      "add",
			Usage:     "add a shard database: the leader migrates it and opens it for new runs",
			ArgsUsage: "<shard-id>",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "dsn", Usage: "PostgreSQL DSN of the new shard's database, reachable from every node (required)"},
			},
			Action: shardAction(shardAdd),
		}, {
			Name: "drain",
			Usage: "stop placing new runs on a shard; runs on it go on and retries inside the window still find them. " +
				"Refused for the last writable or an unreachable shard unless --force",
			ArgsUsage: "<shard-id>",
			Flags: []cli.Flag{
				&cli.BoolFlag{Name: "force", Usage: "drain even when the server calls it unsafe (it prints the risk)"},
				&cli.BoolFlag{Name: "wait", Usage: "show progress until the shard is read_only"},
				&cli.DurationFlag{Name: "poll", Value: drainPollDefault, Usage: "how often --wait reads the shard"},
			},
			Action: shardDrainAction,
		}, {
			Name:      "undrain",
			Usage:     "make a draining or read_only shard writable again",
			ArgsUsage: "<shard-id>",
			Action:    shardAction(shardUndrain),
		}},
	}
}

// shardArg parses a shard id argument.
func shardArg(s string) (uint16, error) {
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0xFFFF {
		return 0, usagef("shard id %q: want an integer from 0 to 65534", s)
	}
	return uint16(n), nil
}

// beginShard is begin for the commands that take a shard id.
func beginShard(c *cli.Context) (*session, uint16, error) {
	s, err := begin(c, "shard-id")
	if err != nil {
		return nil, 0, err
	}
	id, err := shardArg(s.args[0])
	return s, id, err
}

func shardListAction(c *cli.Context) error {
	s, err := begin(c)
	if err != nil {
		return err
	}
	cat, err := s.api.Shards(c.Context)
	if err != nil {
		return failed(err)
	}
	return s.emit(cat.Raw, func(tw *tabwriter.Writer) { catalogTable(tw, cat) })
}

// shardAction is the action of a command that takes a shard id and
// answers that shard; do returns its errors marked failed or usage.
func shardAction(do func(c *cli.Context, api *client.Client, id uint16) (*client.Shard, error)) cli.ActionFunc {
	return func(c *cli.Context) error {
		s, id, err := beginShard(c)
		if err != nil {
			return err
		}
		sh, err := do(c, s.api, id)
		if err != nil {
			return err
		}
		return s.emit(sh.Raw, func(tw *tabwriter.Writer) { shardRows(tw, sh) })
	}
}

func shardStatus(c *cli.Context, api *client.Client, id uint16) (*client.Shard, error) {
	sh, err := api.Shard(c.Context, id)
	return sh, failed(err)
}

func shardAdd(c *cli.Context, api *client.Client, id uint16) (*client.Shard, error) {
	if err := requireFlag(c, "dsn"); err != nil {
		return nil, err
	}
	sh, err := api.AddShard(c.Context, id, c.String("dsn"))
	return sh, failed(err)
}

func shardUndrain(c *cli.Context, api *client.Client, id uint16) (*client.Shard, error) {
	sh, err := api.UndrainShard(c.Context, id)
	return sh, failed(err)
}

// shardDrainAction shows what the shard still holds inside the window,
// drains it and, with --wait, follows it until it is read_only.
func shardDrainAction(c *cli.Context) error {
	s, id, err := beginShard(c)
	if err != nil {
		return err
	}
	poll := c.Duration("poll")
	if poll <= 0 {
		return usagef("--poll %s: must be positive", poll)
	}
	cat, err := s.api.Shards(c.Context)
	if err != nil {
		return failed(err)
	}
	if before := cat.Find(id); before != nil {
		if err := s.human(func(tw *tabwriter.Writer) { beforeDrainRows(tw, before, cat.Window) }); err != nil {
			return err
		}
	}
	d, err := s.api.DrainShard(c.Context, id, c.Bool("force"))
	if err != nil {
		return failed(err)
	}
	if err := s.emit(d.Raw, func(tw *tabwriter.Writer) { drainRows(tw, d) }); err != nil {
		return err
	}
	if !c.Bool("wait") {
		return nil
	}
	w := s.humanWriter()
	p := &progress{w: w, tty: isTerminal(w), window: time.Duration(cat.Window), since: d.Shard.StateSince}
	return failed(p.follow(c.Context, s.api, id, poll))
}

// human writes text for people: to stdout with table output, to stderr
// with JSON output so that stdout stays one JSON document.
func (s *session) human(table func(tw *tabwriter.Writer)) error {
	tw := tabwriter.NewWriter(s.humanWriter(), 0, 0, 2, ' ', 0)
	table(tw)
	return failed(tw.Flush())
}

func (s *session) humanWriter() io.Writer {
	if s.mode == outputJSON {
		return s.c.App.ErrWriter
	}
	return s.c.App.Writer
}

// catalogTable lists the shards, then the window and the leader, then why
// unreachable shards are.
func catalogTable(tw *tabwriter.Writer, cat *client.Catalog) {
	row(tw, "ID", "STATE", "OWNER", "CLAIMS IN WINDOW", "RUNS IN WINDOW", "RUNNING", "WINDOW PASSES", "DATABASE")
	for _, sh := range cat.Shards {
		claims, runs, running, passes := "?", "?", "?", "unreachable"
		if st := sh.Status; st != nil {
			claims, runs, running = fmt.Sprint(st.ClaimsInWindow), fmt.Sprint(st.RunsInWindow), fmt.Sprint(st.RunningExecutions)
			passes = windowLeft(st)
		}
		row(tw, fmt.Sprint(sh.ShardID), sh.State, dash(sh.Owner), claims, runs, running, passes, sh.Database)
	}
	fmt.Fprintf(tw, "\nidempotency window %s; raft leader %s\n", time.Duration(cat.Window), dash(cat.Leader))
	for _, sh := range cat.Shards {
		if !sh.Reachable {
			fmt.Fprintf(tw, "shard %d unreachable: %s\n", sh.ShardID, clean(sh.Error))
		}
	}
}

// shardRows shows one shard.
func shardRows(tw *tabwriter.Writer, sh *client.Shard) {
	kv(tw, "Shard", fmt.Sprint(sh.ShardID))
	kv(tw, "State", sh.State+" since "+stamp(sh.StateSince))
	kv(tw, "Owner", dash(sh.Owner))
	kv(tw, "Database", sh.Database)
	kv(tw, "Added", stamp(sh.AddedAt))
	if sh.Status == nil {
		kv(tw, "Reachable", "no: "+sh.Error)
		return
	}
	windowRows(tw, sh.Status)
}

// windowRows show what a shard holds inside the window.
func windowRows(tw *tabwriter.Writer, st *client.DrainStatus) {
	kv(tw, "Claims in window", countSince(st.ClaimsInWindow, st.NewestClaimAt))
	kv(tw, "Runs in window", countSince(st.RunsInWindow, st.NewestRunAt))
	kv(tw, "Running executions", fmt.Sprint(st.RunningExecutions))
	passes := "already passed"
	if left := windowLeft(st); left != "passed" {
		passes = stamp(*st.WindowPassesAt) + " (" + left + ")"
	}
	kv(tw, "Window passes", passes)
}

// beforeDrainRows show what the shard holds before the drain.
func beforeDrainRows(tw *tabwriter.Writer, sh *client.Shard, window client.Duration) {
	fmt.Fprintf(tw, "Shard %d (%s) before the drain, inside the %s idempotency window:\n", sh.ShardID, sh.State, time.Duration(window))
	if sh.Status == nil {
		kv(tw, "Reachable", "no: "+sh.Error)
	} else {
		windowRows(tw, sh.Status)
	}
	fmt.Fprintln(tw)
}

// drainRows show the drained shard, the risk of a forced drain and what
// the drain keeps.
func drainRows(tw *tabwriter.Writer, d *client.Drain) {
	shardRows(tw, &d.Shard)
	if d.Forced {
		kv(tw, "Forced", "true")
		kv(tw, "Risk", d.Risk)
	}
	fmt.Fprintf(tw, "\nNew runs no longer go to shard %d. Runs on it go on, and keyed and workflow-id retries inside the window still find their first run there.\n",
		d.Shard.ShardID)
	fmt.Fprintln(tw, "The leader makes it read_only once the window has passed since the drain and nothing placed on it is inside the window.")
}

// countSince is "3 (newest <time>)", or "0".
func countSince(n int64, newest *time.Time) string {
	if n == 0 || newest == nil {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("%d (newest %s)", n, stamp(*newest))
}

// windowLeft is "in 1h2m3s" until the window passes, or "passed".
func windowLeft(st *client.DrainStatus) string {
	if st.WindowPassesAt == nil || !st.WindowPassesAt.After(st.Now) {
		return "passed"
	}
	return "in " + roughly(st.WindowPassesAt.Sub(st.Now))
}

// roughly rounds a duration for people: to 100 ms under 10 s, else to the
// second.
func roughly(d time.Duration) string {
	if d < 10*time.Second {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

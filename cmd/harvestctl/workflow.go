package main

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/harvestd/harvest/client"
)

// resultWaitDefault is the default --wait of "workflow result" (the server
// caps the wait at 30 s by default).
const resultWaitDefault = 30 * time.Second

func workflowCommand() *cli.Command {
	return &cli.Command{
		Name:    "workflow",
		Aliases: []string{"wf"},
		Usage:   "start, signal, update, inspect and close workflow runs",
		Subcommands: []*cli.Command{
			startCommand(), signalCommand(), signalWithStartCommand(), updateCommand(), updateWithStartCommand(), describeCommand(), childrenCommand(), queryCommand(),
			resultCommand(),
			historyCommand(), listCommand(), cancelCommand(), terminateCommand(), resetCommand(),
		},
	}
}

// session is what an action needs: its arguments, the client and the
// output format.
type session struct {
	c    *cli.Context
	api  *client.Client
	mode string
	args []string
}

// begin parses the action's arguments (named argNames) and the output
// format.
func begin(c *cli.Context, argNames ...string) (*session, error) {
	args, err := parseArgs(c, argNames...)
	if err != nil {
		return nil, err
	}
	mode, err := outputMode(c)
	if err != nil {
		return nil, err
	}
	return &session{c: c, api: newClient(c), mode: mode, args: args}, nil
}

func idempotencyKeyFlag(usage string) cli.Flag {
	return &cli.StringFlag{Name: "idempotency-key", Usage: usage + " (sent as the Idempotency-Key header)"}
}

func reusePolicyFlag() cli.Flag {
	return &cli.StringFlag{Name: "reuse-policy",
		Usage: "allow_duplicate (server default), reject_duplicate, allow_duplicate_failed_only or terminate_if_running"}
}

func startCommand() *cli.Command {
	return &cli.Command{
		Name:      "start",
		Usage:     "start a workflow run",
		ArgsUsage: "<workflow-name>",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "workflow-id", Usage: "business id (minted by the server when omitted)"},
			&cli.StringFlag{Name: "input-json", Usage: "workflow input as JSON"},
			idempotencyKeyFlag("deduplicates retries of this start"),
			reusePolicyFlag(),
			&cli.StringFlag{Name: "conflict-policy", Usage: "unspecified, fail, use_existing or terminate_existing"},
			&cli.StringFlag{Name: "queue", Usage: "task queue (server default: default)"},
			&cli.StringFlag{Name: "memo-json", Usage: "memo as a JSON object"},
			&cli.DurationFlag{Name: "delay", Usage: "defer the run's first task by this long (e.g. 90s, 2h)"},
			&cli.DurationFlag{Name: "execution-timeout", Usage: "close the run, or its continue-as-new chain, TIMED_OUT after this long (e.g. 1h)"},
			&cli.DurationFlag{Name: "run-timeout", Usage: "close this one run TIMED_OUT after this long"},
			&cli.StringFlag{Name: "start-at", Usage: "run the first task at this RFC 3339 time (not with --delay)"},
			&cli.StringSliceFlag{Name: "callback-url", Usage: "POST the result to this http(s) URL when the run closes (repeatable)"},
			&cli.StringFlag{Name: "concurrency-key", Usage: "the start's key under its workflow's concurrency limit"},
			&cli.IntFlag{Name: "priority", Usage: "dispatch priority while queued: 1 (first) to 5 (last); server default 3"},
			&cli.StringFlag{Name: "fairness-key", Usage: "queued runs of different fairness keys (e.g. tenants) take turns"},
			&cli.IntFlag{Name: "fairness-weight", Usage: "turns the fairness key takes for one of a key of weight 1: 1 to 1000; server default 1"},
		},
		Action: startAction,
	}
}

func startAction(c *cli.Context) error {
	s, err := begin(c, "workflow-name")
	if err != nil {
		return err
	}
	input, err := jsonFlag(c, "input-json")
	if err != nil {
		return err
	}
	memo, err := jsonFlag(c, "memo-json")
	if err != nil {
		return err
	}
	req := client.StartRequest{
		WorkflowID: c.String("workflow-id"), Input: input, Queue: c.String("queue"), Memo: memo,
		IdempotencyKey: c.String("idempotency-key"),
		ReusePolicy:    client.ReusePolicy(c.String("reuse-policy")), ConflictPolicy: client.ConflictPolicy(c.String("conflict-policy")),
		Delay: c.Duration("delay"), ExecutionTimeout: c.Duration("execution-timeout"), RunTimeout: c.Duration("run-timeout"),
		ConcurrencyKey: c.String("concurrency-key"), Priority: c.Int("priority"), FairnessKey: c.String("fairness-key"),
		FairnessWeight: c.Int("fairness-weight"),
	}
	if at := c.String("start-at"); at != "" {
		if req.StartAt, err = time.Parse(time.RFC3339, at); err != nil {
			return usagef("--start-at %q: want an RFC 3339 time like 2026-01-02T15:04:05Z", at)
		}
	}
	for _, u := range c.StringSlice("callback-url") {
		req.CompletionCallbacks = append(req.CompletionCallbacks, client.Callback{URL: u})
	}
	res, err := s.api.Start(c.Context, s.args[0], req)
	if err != nil {
		return failed(err)
	}
	return s.emit(res.Raw, func(tw *tabwriter.Writer) {
		startedRows(tw, res.ExecutionID, res.WorkflowName, res.WorkflowID, res.State)
		optionalBool(tw, "Started fresh", res.StartedFresh)
		optionalBool(tw, "Deduplicated", res.Deduplicated)
		optionalText(tw, "Latest execution ID", res.LatestExecutionID)
		optionalText(tw, "Latest state", res.LatestState)
	})
}

func signalCommand() *cli.Command {
	return &cli.Command{
		Name:      "signal",
		Usage:     "send a signal to a run",
		ArgsUsage: "<execution-id> <signal>",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "payload-json", Usage: "signal payload as JSON (default null)"},
			idempotencyKeyFlag("delivers the signal at most once per run (per continue-as-new chain)"),
		},
		Action: signalAction,
	}
}

func signalAction(c *cli.Context) error {
	s, err := begin(c, "execution-id", "signal")
	if err != nil {
		return err
	}
	payload, err := jsonFlag(c, "payload-json")
	if err != nil {
		return err
	}
	res, err := s.api.Signal(c.Context, s.args[0], s.args[1], payload, client.SignalOptions{IdempotencyKey: c.String("idempotency-key")})
	if err != nil {
		return failed(err)
	}
	return s.emit(res.Raw, func(tw *tabwriter.Writer) {
		kv(tw, "Execution ID", res.ExecutionID)
		kv(tw, "Signal", s.args[1])
		kv(tw, "Signal delivered", delivered(res.SignalDelivered))
		optionalText(tw, "Current execution ID", res.CurrentExecutionID)
	})
}

func signalWithStartCommand() *cli.Command {
	return &cli.Command{
		Name:      "signal-with-start",
		Usage:     "signal the run holding a workflow id, starting one if none is running",
		ArgsUsage: "<workflow-name>",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "workflow-id", Usage: "business id to signal or start (required)"},
			&cli.StringFlag{Name: "signal", Usage: "signal name (required)"},
			&cli.StringFlag{Name: "signal-payload-json", Usage: "signal payload as JSON"},
			&cli.StringFlag{Name: "input-json", Usage: "input of a started run as JSON"},
			idempotencyKeyFlag("the signal's key, scoped to the workflow id"),
			reusePolicyFlag(),
			&cli.StringFlag{Name: "queue", Usage: "task queue of a started run"},
			&cli.StringFlag{Name: "memo-json", Usage: "memo of a started run as a JSON object"},
		},
		Action: signalWithStartAction,
	}
}

func signalWithStartAction(c *cli.Context) error {
	s, err := begin(c, "workflow-name")
	if err != nil {
		return err
	}
	if err := requireFlag(c, "workflow-id", "signal"); err != nil {
		return err
	}
	req := client.SignalWithStartRequest{WorkflowID: c.String("workflow-id"), SignalName: c.String("signal"),
		Queue: c.String("queue"), ReusePolicy: client.ReusePolicy(c.String("reuse-policy")), IdempotencyKey: c.String("idempotency-key")}
	payload, err := jsonFlag(c, "signal-payload-json")
	if err != nil {
		return err
	}
	input, err := jsonFlag(c, "input-json")
	if err != nil {
		return err
	}
	memo, err := jsonFlag(c, "memo-json")
	if err != nil {
		return err
	}
	req.SignalPayload, req.Input, req.Memo = payload, input, memo
	res, err := s.api.SignalWithStart(c.Context, s.args[0], req)
	if err != nil {
		return failed(err)
	}
	return s.emit(res.Raw, func(tw *tabwriter.Writer) {
		startedRows(tw, res.ExecutionID, res.WorkflowName, res.WorkflowID, res.State)
		optionalBool(tw, "Started fresh", res.StartedFresh)
		kv(tw, "Signal delivered", delivered(res.SignalDelivered))
	})
}

func describeCommand() *cli.Command {
	return &cli.Command{
		Name:      "describe",
		Usage:     "show a run, its pending work and its first history events",
		ArgsUsage: "<execution-id>",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "follow", Usage: "follow a run that continued as new to the current run of its chain"},
		},
		Action: describeAction,
	}
}

// followLimit bounds the runs describe --follow walks through.
const followLimit = 10_000

func describeAction(c *cli.Context) error {
	s, err := begin(c, "execution-id")
	if err != nil {
		return err
	}
	d, err := s.api.Describe(c.Context, s.args[0])
	for hops := 0; err == nil && c.Bool("follow") && d.Execution.ContinuedTo != "" && hops < followLimit; hops++ {
		d, err = s.api.Describe(c.Context, d.Execution.ContinuedTo)
	}
	if err != nil {
		return failed(err)
	}
	return s.emit(d.Raw, func(tw *tabwriter.Writer) { describeTable(tw, d) })
}

func childrenCommand() *cli.Command {
	return &cli.Command{
		Name:      "children",
		Usage:     "list the child workflows a run started, as the run knows them",
		ArgsUsage: "<execution-id>",
		Action:    childrenAction,
	}
}

func childrenAction(c *cli.Context) error {
	s, err := begin(c, "execution-id")
	if err != nil {
		return err
	}
	l, err := s.api.Children(c.Context, s.args[0])
	if err != nil {
		return failed(err)
	}
	return s.emit(l.Raw, func(tw *tabwriter.Writer) { childrenTable(tw, l.Children) })
}

func queryCommand() *cli.Command {
	return &cli.Command{
		Name:      "query",
		Usage:     "ask a run a question its code answers (a query handler), without changing it",
		ArgsUsage: "<execution-id> <query>",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "args-json", Usage: "the query's arguments as JSON (default: none)"},
		},
		Action: queryAction,
	}
}

func queryAction(c *cli.Context) error {
	s, err := begin(c, "execution-id", "query")
	if err != nil {
		return err
	}
	args, err := jsonFlag(c, "args-json")
	if err != nil {
		return err
	}
	var queryArgs any
	if args != nil {
		queryArgs = args
	}
	var result json.RawMessage
	if err := s.api.Query(c.Context, s.args[0], s.args[1], queryArgs, &result); err != nil {
		return failed(err)
	}
	return s.emit(result, func(tw *tabwriter.Writer) { kv(tw, "Result", string(result)) })
}

func resultCommand() *cli.Command {
	return &cli.Command{
		Name:      "result",
		Usage:     "wait for a run to close and show its outcome (exit code 3 when still running)",
		ArgsUsage: "<execution-id>",
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "wait", Value: resultWaitDefault, Usage: "how long to wait (the server caps it)"},
		},
		Action: resultAction,
	}
}

func resultAction(c *cli.Context) error {
	s, err := begin(c, "execution-id")
	if err != nil {
		return err
	}
	wait := c.Duration("wait")
	r, closed, err := s.api.Result(c.Context, s.args[0], wait)
	if err != nil {
		return failed(err)
	}
	if !closed {
		return stillRunning{fmt.Sprintf("execution %s is still running after waiting %s", s.args[0], wait)}
	}
	return s.emit(r.Raw, func(tw *tabwriter.Writer) {
		kv(tw, "Execution ID", r.ExecutionID)
		kv(tw, "State", r.State)
		if r.CompletedAt != nil {
			kv(tw, "Completed", stamp(*r.CompletedAt))
		}
		kv(tw, "Output", jsonCell(r.Output, 0))
		if !isNull(r.Error) {
			kv(tw, "Error", jsonCell(r.Error, 0))
		}
	})
}

func historyCommand() *cli.Command {
	return &cli.Command{
		Name:      "history",
		Usage:     "page through a run's history events",
		ArgsUsage: "<execution-id>",
		Flags: []cli.Flag{
			&cli.Int64Flag{Name: "after", Usage: "show events after this event id (the next_cursor of the previous page)"},
			&cli.IntFlag{Name: "limit", Usage: "page size, 1-1000 (server default 100)"},
			&cli.StringSliceFlag{Name: "event-type", Usage: "keep only this event type (repeatable)"},
			&cli.BoolFlag{Name: "all", Usage: "fetch every page (following next_cursor) and print them as one page, e.g. for harvest.ReplayHistoryFile"},
		},
		Action: historyAction,
	}
}

func historyAction(c *cli.Context) error {
	s, err := begin(c, "execution-id")
	if err != nil {
		return err
	}
	q := client.HistoryQuery{Limit: c.Int("limit"), EventTypes: c.StringSlice("event-type")}
	if c.IsSet("after") {
		after := c.Int64("after")
		q.After = &after
	}
	fetch := s.api.History
	if c.Bool("all") {
		fetch = s.allHistory
	}
	p, err := fetch(c.Context, s.args[0], q)
	if err != nil {
		return failed(err)
	}
	return s.emit(p.Raw, func(tw *tabwriter.Writer) { historyTable(tw, p) })
}

// allHistory reads every page of the history from q.After on and returns
// them as one page, its Raw the JSON of that page.
func (s *session) allHistory(ctx context.Context, id string, q client.HistoryQuery) (*client.HistoryPage, error) {
	all := &client.HistoryPage{Events: []client.Event{}}
	for {
		p, err := s.api.History(ctx, id, q)
		if err != nil {
			return nil, err
		}
		all.Events = append(all.Events, p.Events...)
		all.TotalEvents, all.LastEventID = p.TotalEvents, p.LastEventID
		if p.NextCursor == nil {
			break
		}
		q.After = p.NextCursor
	}
	raw, err := json.Marshal(all)
	if err != nil {
		return nil, fmt.Errorf("encode history: %w", err)
	}
	all.Raw = raw
	return all, nil
}

func listCommand() *cli.Command {
	return &cli.Command{
		Name:  "list",
		Usage: "list runs, newest first",
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "state", Usage: "keep runs in this state (repeatable): QUEUED, RUNNING, COMPLETED, FAILED, …"},
			&cli.StringFlag{Name: "workflow-name", Usage: "keep runs of this workflow"},
			&cli.StringFlag{Name: "workflow-id", Usage: "keep runs with this business id"},
			&cli.StringFlag{Name: "workflow-id-prefix", Usage: "keep runs whose business id starts with this"},
			&cli.IntFlag{Name: "page-size", Usage: "page size, 1-200 (server default 50)"},
			&cli.StringFlag{Name: "cursor", Usage: "next_cursor of the previous page"},
			&cli.StringFlag{Name: "order", Usage: "asc or desc (server default desc)"},
			&cli.StringFlag{Name: "started-after", Usage: "keep runs started at or after this RFC 3339 time"},
			&cli.StringFlag{Name: "started-before", Usage: "keep runs started before this RFC 3339 time"},
			&cli.BoolFlag{Name: "counts", Usage: "also count the runs by state (state filter and cursor aside)"},
		},
		Action: listAction,
	}
}

func listAction(c *cli.Context) error {
	s, err := begin(c)
	if err != nil {
		return err
	}
	q := client.ListQuery{
		States: c.StringSlice("state"), WorkflowName: c.String("workflow-name"), WorkflowID: c.String("workflow-id"),
		WorkflowIDPrefix: c.String("workflow-id-prefix"), PageSize: c.Int("page-size"), Cursor: c.String("cursor"), Order: c.String("order"), Counts: c.Bool("counts"),
	}
	if q.StartedAfter, err = timeFlag(c, "started-after"); err != nil {
		return err
	}
	if q.StartedBefore, err = timeFlag(c, "started-before"); err != nil {
		return err
	}
	p, err := s.api.List(c.Context, q)
	if err != nil {
		return failed(err)
	}
	return s.emit(p.Raw, func(tw *tabwriter.Writer) { listTable(tw, p) })
}

// timeFlag reads an optional RFC 3339 flag (zero when unset).
func timeFlag(c *cli.Context, name string) (time.Time, error) {
	v := c.String(name)
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, usagef("--%s %q is not an RFC 3339 time (2026-01-02T15:04:05Z)", name, v)
	}
	return t, nil
}

func reasonFlag() cli.Flag {
	return &cli.StringFlag{Name: "reason", Usage: "why, kept in the run's history"}
}

func cancelCommand() *cli.Command {
	return &cli.Command{
		Name:      "cancel",
		Usage:     "ask a running run to cancel (its code may clean up first; it stays RUNNING until it returns)",
		ArgsUsage: "<execution-id>",
		Flags:     []cli.Flag{reasonFlag()},
		Action:    cancelAction,
	}
}

func cancelAction(c *cli.Context) error {
	s, err := begin(c, "execution-id")
	if err != nil {
		return err
	}
	res, err := s.api.Cancel(c.Context, s.args[0], c.String("reason"))
	if err != nil {
		return failed(err)
	}
	return s.emit(res.Raw, func(tw *tabwriter.Writer) {
		closedRows(tw, res.ExecutionID, res.State, res.Reason)
		kv(tw, "Cancel requested", fmt.Sprint(res.CancelRequested))
		kv(tw, "Newly cancelled", fmt.Sprint(res.NewlyCancelled))
		optionalText(tw, "Current execution ID", res.CurrentExecutionID)
	})
}

func terminateCommand() *cli.Command {
	return &cli.Command{
		Name:      "terminate",
		Usage:     "force-close a run (a no-op on a closed run)",
		ArgsUsage: "<execution-id>",
		Flags:     []cli.Flag{reasonFlag()},
		Action:    terminateAction,
	}
}

func terminateAction(c *cli.Context) error {
	s, err := begin(c, "execution-id")
	if err != nil {
		return err
	}
	res, err := s.api.Terminate(c.Context, s.args[0], c.String("reason"))
	if err != nil {
		return failed(err)
	}
	return s.emit(res.Raw, func(tw *tabwriter.Writer) {
		closedRows(tw, res.ExecutionID, res.State, res.Reason)
		kv(tw, "Newly terminated", fmt.Sprint(res.NewlyTerminated))
		optionalText(tw, "Current execution ID", res.CurrentExecutionID)
	})
}

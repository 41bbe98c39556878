package main

import (
	"bufio"
	"encoding/json"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/harvestd/harvest/client"
)

func activityCommand() *cli.Command {
	return &cli.Command{
		Name:  "activity",
		Usage: "register, list and delete HTTP activities that workflows call by name (harvest.RemoteActivity) (needs a token of scope admin)",
		Subcommands: []*cli.Command{{
			Name: "register",
			Usage: "register an HTTP activity: every attempt POSTs its input to --url with an Idempotency-Key; " +
				"header values that are credentials belong in --header-file, never a flag value",
			ArgsUsage: "<name>",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "url", Usage: "the http or https URL each attempt POSTs to (required)"},
				&cli.StringSliceFlag{Name: "header", Usage: `a header sent on every attempt, "Name: value" (repeatable; not for credentials)`},
				&cli.StringFlag{Name: "header-file", Usage: `file of headers sent on every attempt, one "Name: value" a line (credentials go here)`},
				&cli.DurationFlag{Name: "timeout", Usage: "bounds each attempt, at most 10m (default: the call's start-to-close)"},
				&cli.IntFlag{Name: "max-attempts", Usage: "retry: attempts in all, at most 100 (default 3) for calls that pass no retry policy"},
				&cli.DurationFlag{Name: "initial-interval", Usage: "retry: the first backoff (default 1s)"},
				&cli.Float64Flag{Name: "backoff-coefficient", Usage: "retry: the backoff's factor, 1 to 10 (default 2)"},
				&cli.DurationFlag{Name: "max-interval", Usage: "retry: the longest backoff (default 5m)"},
				&cli.StringSliceFlag{Name: "non-retryable-error", Usage: "retry: an error type that ends retries, e.g. http_503 (repeatable)"},
			},
			Action: activityRegisterAction,
		}, {
			Name:   "list",
			Usage:  "list every HTTP activity (header values redacted)",
			Action: activityListAction,
		}, {
			Name:      "delete",
			Usage:     "delete an HTTP activity; attempts that start afterwards fail as activity_not_registered",
			ArgsUsage: "<name>",
			Action:    activityDeleteAction,
		}},
	}
}

func activityRegisterAction(c *cli.Context) error {
	s, err := begin(c, "name")
	if err != nil {
		return err
	}
	req, err := activityRequest(c, s.args[0])
	if err != nil {
		return err
	}
	a, err := s.api.RegisterHTTPActivity(c.Context, req)
	if err != nil {
		return failed(err)
	}
	return s.emit(a.Raw, func(tw *tabwriter.Writer) { activityRows(tw, a) })
}

// activityRequest reads the flags of activity register.
func activityRequest(c *cli.Context, name string) (client.RegisterHTTPActivityRequest, error) {
	if err := requireFlag(c, "url"); err != nil {
		return client.RegisterHTTPActivityRequest{}, err
	}
	headers, err := activityHeaders(c)
	if err != nil {
		return client.RegisterHTTPActivityRequest{}, err
	}
	req := client.RegisterHTTPActivityRequest{Name: name, URL: c.String("url"), Headers: headers, Timeout: c.Duration("timeout")}
	retry := client.ActivityRetry{MaxAttempts: c.Int("max-attempts"), InitialInterval: c.Duration("initial-interval"),
		BackoffCoefficient: c.Float64("backoff-coefficient"), MaxInterval: c.Duration("max-interval"),
		NonRetryableErrors: c.StringSlice("non-retryable-error")}
	for _, f := range []string{"max-attempts", "initial-interval", "backoff-coefficient", "max-interval", "non-retryable-error"} {
		if c.IsSet(f) {
			req.Retry = &retry
		}
	}
	return req, nil
}

// activityHeaders reads --header-file, then --header: "Name: value"
// lines.
func activityHeaders(c *cli.Context) (map[string]string, error) {
	lines := c.StringSlice("header")
	if path := c.String("header-file"); path != "" {
		f, err := os.Open(path)
		if err != nil {
			return nil, usagef("--header-file: %v", err)
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if line := strings.TrimSpace(sc.Text()); line != "" && !strings.HasPrefix(line, "#") {
				lines = append(lines, line)
			}
		}
		if err := sc.Err(); err != nil {
			return nil, usagef("--header-file: %v", err)
		}
	}
	if len(lines) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(lines))
	for _, line := range lines {
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, usagef(`a header must read "Name: value" (got one without a name or a colon)`)
		}
		out[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return out, nil
}

func activityListAction(c *cli.Context) error {
	s, err := begin(c)
	if err != nil {
		return err
	}
	acts, err := s.api.HTTPActivities(c.Context)
	if err != nil {
		return failed(err)
	}
	return emitList(s, "activities", acts, func(a client.HTTPActivity) json.RawMessage { return a.Raw }, activitiesTable)
}

func activityDeleteAction(c *cli.Context) error {
	s, err := begin(c, "name")
	if err != nil {
		return err
	}
	if err := s.api.DeleteHTTPActivity(c.Context, s.args[0]); err != nil {
		return failed(err)
	}
	raw, _ := json.Marshal(map[string]any{"name": s.args[0], "deleted": true})
	return s.emit(raw, func(tw *tabwriter.Writer) { kv(tw, "Deleted", s.args[0]) })
}

// activityRows shows one activity (its header values are redacted by the
// node).
func activityRows(tw *tabwriter.Writer, a *client.HTTPActivity) {
	kv(tw, "Name", a.Name)
	kv(tw, "URL", a.URL)
	kv(tw, "Headers", dash(headerNames(a.Headers)))
	kv(tw, "Timeout", dash(a.Timeout))
	if r := a.Retry; r != nil {
		raw, _ := json.Marshal(r)
		kv(tw, "Retry", string(raw))
	} else {
		kv(tw, "Retry", "-")
	}
	kv(tw, "Created", stamp(a.CreatedAt))
}

// headerNames lists the header names, sorted, without their values.
func headerNames(h map[string]string) string {
	return strings.Join(slices.Sorted(maps.Keys(h)), ",")
}

// activitiesTable lists activities by name.
func activitiesTable(tw *tabwriter.Writer, acts []client.HTTPActivity) {
	row(tw, "NAME", "URL", "HEADERS", "TIMEOUT", "CREATED")
	for _, a := range acts {
		row(tw, a.Name, a.URL, dash(headerNames(a.Headers)), dash(a.Timeout), stamp(a.CreatedAt))
	}
}

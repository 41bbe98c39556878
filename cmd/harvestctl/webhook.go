package main

import (
	"cmp"
	"encoding/json"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/harvestd/harvest/client"
)

func webhookCommand() *cli.Command {
	return &cli.Command{
		Name:  "webhook",
		Usage: "create, list and delete the webhook receivers that start or signal runs from verified Stripe, GitHub or HMAC-signed deliveries (needs a token of scope admin)",
		Subcommands: []*cli.Command{{
			Name:      "create",
			Usage:     "create a receiver at /api/harvest/webhooks/<name>; its secret is read from --secret-file or HARVEST_WEBHOOK_SECRET, never a flag value",
			ArgsUsage: "<name>",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "provider", Usage: "stripe, github or generic (required)"},
				&cli.StringFlag{Name: "secret-file", Usage: "file holding the provider's signing secret"},
				&cli.StringFlag{Name: "workflow", Usage: "the workflow to start or signal (required)"},
				&cli.StringFlag{Name: "action", Value: client.WebhookStart, Usage: "start or signal_with_start"},
				&cli.StringFlag{Name: "signal", Usage: "signal_with_start: the signal's name"},
				&cli.StringFlag{Name: "workflow-id-pointer", Usage: "JSON pointer to the workflow id in the payload, e.g. /data/object/customer"},
				&cli.StringFlag{Name: "key-pointer", Usage: "generic: JSON pointer to the delivery id"},
				&cli.StringFlag{Name: "signature-header", Usage: "generic: the header with the hex HMAC-SHA256 of \"<timestamp>.<body>\" (of the body alone with --no-timestamp)"},
				&cli.StringFlag{Name: "timestamp-header", Usage: "generic: the header with the delivery's unix seconds, which the signature covers (default Webhook-Timestamp)"},
				&cli.BoolFlag{Name: "no-timestamp", Usage: "generic: sign the body only, for a sender that cannot sign a timestamp (a captured delivery can be replayed once the idempotency window has passed)"},
				&cli.DurationFlag{Name: "tolerance", Usage: "stripe, or generic with a timestamp: how far a signature's timestamp may be from now (default 5m)"},
			},
			Action: webhookCreateAction,
		}, {
			Name:   "list",
			Usage:  "list every receiver (secrets redacted)",
			Action: webhookListAction,
		}, {
			Name:      "delete",
			Usage:     "delete a receiver",
			ArgsUsage: "<name>",
			Action:    webhookDeleteAction,
		}},
	}
}

func webhookCreateAction(c *cli.Context) error {
	s, err := begin(c, "name")
	if err != nil {
		return err
	}
	req, err := webhookRequest(c, s.args[0])
	if err != nil {
		return err
	}
	w, err := s.api.CreateWebhook(c.Context, req)
	if err != nil {
		return failed(err)
	}
	return s.emit(w.Raw, func(tw *tabwriter.Writer) { webhookRows(tw, w) })
}

// webhookRequest reads the flags of webhook create; the secret comes from
// a file or the environment, so that it stays out of shell history and
// process lists.
func webhookRequest(c *cli.Context, name string) (client.CreateWebhookRequest, error) {
	for _, f := range []string{"provider", "workflow"} {
		if err := requireFlag(c, f); err != nil {
			return client.CreateWebhookRequest{}, err
		}
	}
	if c.Bool("no-timestamp") && c.String("timestamp-header") != "" {
		return client.CreateWebhookRequest{}, usagef("--no-timestamp and --timestamp-header exclude each other")
	}
	secret := os.Getenv("HARVEST_WEBHOOK_SECRET")
	if path := c.String("secret-file"); path != "" {
		raw, err := os.ReadFile(path)
		if err != nil {
			return client.CreateWebhookRequest{}, usagef("--secret-file: %v", err)
		}
		secret = strings.TrimRight(string(raw), "\r\n")
	}
	if secret == "" {
		return client.CreateWebhookRequest{}, usagef("the webhook secret is missing: set --secret-file or HARVEST_WEBHOOK_SECRET")
	}
	return client.CreateWebhookRequest{Name: name, Provider: c.String("provider"), Secret: secret,
		Action: c.String("action"), Workflow: c.String("workflow"), Signal: c.String("signal"),
		WorkflowIDPointer: c.String("workflow-id-pointer"), KeyPointer: c.String("key-pointer"),
		SignatureHeader: c.String("signature-header"), TimestampHeader: c.String("timestamp-header"),
		NoTimestamp: c.Bool("no-timestamp"), Tolerance: c.Duration("tolerance")}, nil
}

func webhookListAction(c *cli.Context) error {
	s, err := begin(c)
	if err != nil {
		return err
	}
	hooks, err := s.api.Webhooks(c.Context)
	if err != nil {
		return failed(err)
	}
	return emitList(s, "webhooks", hooks, func(w client.Webhook) json.RawMessage { return w.Raw }, webhooksTable)
}

func webhookDeleteAction(c *cli.Context) error {
	s, err := begin(c, "name")
	if err != nil {
		return err
	}
	if err := s.api.DeleteWebhook(c.Context, s.args[0]); err != nil {
		return failed(err)
	}
	raw, _ := json.Marshal(map[string]any{"name": s.args[0], "deleted": true})
	return s.emit(raw, func(tw *tabwriter.Writer) { kv(tw, "Deleted", s.args[0]) })
}

// webhookRows shows one receiver (its secret is redacted by the node).
func webhookRows(tw *tabwriter.Writer, w *client.Webhook) {
	kv(tw, "Name", w.Name)
	kv(tw, "Path", w.Path)
	kv(tw, "Provider", w.Provider)
	kv(tw, "Action", w.Action)
	kv(tw, "Workflow", w.Workflow)
	kv(tw, "Signal", dash(w.Signal))
	kv(tw, "Workflow id pointer", dash(w.WorkflowIDPointer))
	if w.Provider == client.WebhookGeneric {
		kv(tw, "Key pointer", w.KeyPointer)
		kv(tw, "Signature header", w.SignatureHeader)
		kv(tw, "Timestamp header", cmp.Or(w.TimestampHeader, "- (signs the body only)"))
	}
	if w.Tolerance != "" {
		kv(tw, "Tolerance", w.Tolerance)
	}
	kv(tw, "Created", stamp(w.CreatedAt))
}

// webhooksTable lists receivers by name.
func webhooksTable(tw *tabwriter.Writer, hooks []client.Webhook) {
	row(tw, "NAME", "PROVIDER", "ACTION", "WORKFLOW", "PATH", "CREATED")
	for _, w := range hooks {
		row(tw, w.Name, w.Provider, w.Action, w.Workflow, w.Path, stamp(w.CreatedAt))
	}
}

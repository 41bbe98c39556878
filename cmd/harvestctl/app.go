package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/harvestd/harvest/client"
)

// Defaults of the global flags.
const (
	addrDefault   = "http://127.0.0.1:7233"
	outputDefault = outputTable
	userAgent     = "harvestctl"
)

// Output formats of --output.
const (
	outputTable = "table"
	outputJSON  = "json"
)

// newApp builds the CLI writing to stdout and stderr. It never calls
// os.Exit: Run returns the error and run maps it to an exit code.
//
// urfave/cli keeps some state in package variables (the help flag and
// command), so two apps must not run concurrently.
func newApp(stdout, stderr io.Writer) *cli.App {
	app := &cli.App{
		Name:            "harvestctl",
		Usage:           "control Harvest workflows and inspect the cluster through any harvestd node",
		HideVersion:     true,
		Writer:          stdout,
		ErrWriter:       stderr,
		ExitErrHandler:  func(*cli.Context, error) {},
		OnUsageError:    onUsageError,
		HideHelpCommand: true,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "addr", Value: addrDefault, EnvVars: []string{"HARVEST_ADDR"},
				Usage: "base URL of any harvestd node"},
			&cli.StringFlag{Name: "token", EnvVars: []string{"HARVEST_TOKEN"},
				Usage: "bearer token sent as Authorization: Bearer"},
			&cli.StringFlag{Name: "ca-cert", EnvVars: []string{"HARVEST_CA_CERT"},
				Usage: "PEM file of the CA that signed the nodes' certificates (an https --addr; default: the system roots)"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: outputDefault,
				Usage: "output format: table or json (the server's JSON, pretty-printed)"},
		},
		Before:   loadCACert,
		Commands: []*cli.Command{workflowCommand(), clusterCommand(), shardCommand(), gateCommand(), scheduleCommand(), deferredCommand(), tokenCommand(), webhookCommand(), activityCommand(), limitCommand(), batchCommand(), certsCommand(), flowCommand(), benchCommand()},
	}
	for _, cmd := range app.Commands {
		prepare(cmd, cmd.Name)
	}
	return app
}

// onUsageError returns flag parsing errors instead of printing them with
// the whole help text.
func onUsageError(_ *cli.Context, err error, _ bool) error {
	return usagef("%v", err)
}

// prepare sets what every command shares: usage errors are returned,
// "help" is a flag, not a subcommand, and a refused token comes with a
// hint. path is the command's name from the app ("workflow start").
func prepare(cmd *cli.Command, path string) {
	cmd.OnUsageError = onUsageError
	cmd.HideHelpCommand = true
	if cmd.Action != nil {
		cmd.Action = withAuthHint(path, cmd.Action)
	}
	for _, sub := range cmd.Subcommands {
		prepare(sub, path+" "+sub.Name)
	}
}

// newClient builds the API client from the global flags.
func newClient(c *cli.Context) *client.Client {
	opts := []client.Option{client.WithToken(c.String("token")), client.WithUserAgent(userAgent)}
	if cfg, ok := c.App.Metadata[tlsMetadata].(*tls.Config); ok {
		opts = append(opts, client.WithTLSConfig(cfg))
	}
	return client.New(c.String("addr"), opts...)
}

// tlsMetadata is the app metadata key of the --ca-cert TLS configuration.
const tlsMetadata = "tls"

// loadCACert reads --ca-cert into the TLS configuration of newClient.
func loadCACert(c *cli.Context) error {
	path := c.String("ca-cert")
	if path == "" {
		return nil
	}
	pem, err := os.ReadFile(path)
	if err != nil {
		return usagef("--ca-cert: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return usagef("--ca-cert %s: no PEM certificate", path)
	}
	if c.App.Metadata == nil {
		c.App.Metadata = map[string]any{}
	}
	c.App.Metadata[tlsMetadata] = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}
	return nil
}

// outputMode reads --output.
func outputMode(c *cli.Context) (string, error) {
	switch o := c.String("output"); o {
	case outputTable, outputJSON:
		return o, nil
	default:
		return "", usagef("--output %q: want table or json", o)
	}
}

// parseArgs returns the positional arguments of the command, which must
// number exactly len(names). Flags may follow positional arguments
// ("workflow result <id> --wait 5s"): urfave/cli v2 stops parsing at the
// first positional one, so the rest is parsed here, against the command's
// flags and the global ones.
func parseArgs(c *cli.Context, names ...string) ([]string, error) {
	var pos []string
	args := c.Args().Slice()
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if name == "help" || name == "h" {
			_ = cli.ShowSubcommandHelp(c)
			return nil, errHelpShown
		}
		f := lookupFlag(c, name)
		if f == nil {
			return nil, usagef("flag provided but not defined: %s", a)
		}
		if !hasValue {
			if tv, ok := f.(interface{ TakesValue() bool }); ok && !tv.TakesValue() {
				value = "true"
			} else if i+1 < len(args) {
				i++
				value = args[i]
			} else {
				return nil, usagef("flag needs an argument: %s", a)
			}
		}
		if err := c.Set(name, value); err != nil {
			return nil, usagef("invalid value %q for flag --%s: %v", value, name, err)
		}
	}
	if len(pos) != len(names) {
		return nil, usagef("%s: want %d argument(s) <%s>, got %d", c.Command.HelpName, len(names), strings.Join(names, "> <"), len(pos))
	}
	return pos, nil
}

// lookupFlag finds a flag of the command or of the app by any of its
// names.
func lookupFlag(c *cli.Context, name string) cli.Flag {
	for _, flags := range [][]cli.Flag{c.Command.Flags, c.App.Flags} {
		for _, f := range flags {
			for _, n := range f.Names() {
				if n == name {
					return f
				}
			}
		}
	}
	return nil
}

// jsonFlag returns the value of a --*-json flag, checked to be JSON; nil
// when the flag is not set.
func jsonFlag(c *cli.Context, name string) (json.RawMessage, error) {
	if !c.IsSet(name) {
		return nil, nil
	}
	raw := json.RawMessage(c.String(name))
	if !json.Valid(raw) {
		return nil, usagef("--%s: not valid JSON: %s", name, raw)
	}
	return raw, nil
}

// requireFlag reports a missing required flag. The check is made in the
// action, after parseArgs, so that the flag may follow the arguments.
func requireFlag(c *cli.Context, names ...string) error {
	var missing []string
	for _, n := range names {
		if c.String(n) == "" {
			missing = append(missing, "--"+n)
		}
	}
	if len(missing) > 0 {
		return usagef("%s: missing required flag %s", c.Command.HelpName, strings.Join(missing, ", "))
	}
	return nil
}

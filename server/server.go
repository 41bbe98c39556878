// Package server turns a Go program into a Harvest node binary: the
// caller's workflows and activities, with exactly harvestd's commands
// (dev, agent), flags, HARVEST_* environment variables, defaults, help,
// logging, signal handling and start-up hints. cmd/harvestd is this
// package over the demo workflows.
//
// # Your own binary
//
//	func main() {
//		reg := harvest.NewRegistry()
//		if err := reg.Register(payout.Workflow, payout.Charge); err != nil {
//			log.Fatal(err)
//		}
//		server.Main(reg, server.WithName("payoutd"), server.WithVersion("1.4.0"))
//	}
//
// Then `payoutd dev` runs one node on a managed PostgreSQL and `payoutd
// --join …` (short for `payoutd agent --join …`) one node of a cluster,
// as harvestd does; see the project's README for every flag.
//
// # Embedding
//
// Run is Main without the process exit, for programs that run the node
// among other things; node.New is the layer beneath, for programs that
// configure a node themselves instead of through flags.
package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/node"
)

// NameDefault is the binary name Main and Run use unless WithName says
// otherwise.
const NameDefault = "harvestd"

// Option adjusts a server binary.
type Option func(*options)

type options struct {
	name    string
	version string
	usage   string
	stderr  io.Writer
}

// WithName sets the binary's name, shown in help and error lines and
// logged as the component of its own lines. Default NameDefault.
func WithName(name string) Option { return func(o *options) { o.name = name } }

// WithVersion sets the version --version prints and gossip advertises.
// Default node.Version.
func WithVersion(v string) Option { return func(o *options) { o.version = v } }

// WithUsage sets the one-line description in the help.
func WithUsage(u string) Option { return func(o *options) { o.usage = u } }

func newOptions(opts []Option) options {
	o := options{name: NameDefault, version: node.Version, usage: "a Harvest durable workflow server", stderr: os.Stderr}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// Main runs the command line of os.Args over reg and exits: status 0
// after a clean stop, 1 after an error (printed on one line to stderr).
// SIGINT or SIGTERM stops the node gracefully; a second one kills it.
func Main(reg *harvest.Registry, opts ...Option) {
	o := newOptions(opts)
	if err := Run(context.Background(), os.Args, reg, opts...); err != nil {
		fmt.Fprintln(o.stderr, o.name+": "+oneLine(err))
		os.Exit(1)
	}
}

// Run runs the command line args (args[0] is the program) over reg until
// the node stops; ctx ending stops it as a signal would. Errors a user
// can fix come as one clear line (see Main).
func Run(ctx context.Context, args []string, reg *harvest.Registry, opts ...Option) error {
	if reg == nil {
		return errors.New("server: a registry is required")
	}
	a := &app{reg: reg, opts: newOptions(opts)}
	args, err := impliedCommand(args, a.opts.name)
	if err != nil {
		return err
	}
	return a.cli().RunContext(ctx, args)
}

// app is one binary: its registry and options.
type app struct {
	reg  *harvest.Registry
	opts options
}

// cli builds the command line.
func (a *app) cli() *cli.App {
	return &cli.App{
		Name:    a.opts.name,
		Usage:   a.opts.usage,
		Version: a.opts.version,
		UsageText: a.opts.name + " dev [options]\n" +
			a.opts.name + " --join HOST:PORT [agent options]   (short for: " + a.opts.name + " agent --join HOST:PORT …)\n" +
			a.opts.name + " agent [options]",
		// Main prints the error once, in one line where it can.
		ExitErrHandler: func(*cli.Context, error) {},
		// A --shard DSN may contain commas; parseShards splits lists itself.
		DisableSliceFlagSeparator: true,
		Commands: []*cli.Command{{
			Name:   "dev",
			Usage:  "run one node with this binary's workflows, on a managed PostgreSQL unless --postgres is set",
			Flags:  devFlags(),
			Action: a.runDev,
		}, {
			Name:  "agent",
			Usage: "run one cluster node with this binary's workflows, serving its share of the shard databases (static --shard list or raft catalog)",
			UsageText: a.opts.name + " agent --shard ID=DSN [--shard ID=DSN ...] [--join HOST:PORT ...] [options]\n" +
				a.opts.name + " agent --raft-addr HOST:PORT --bootstrap-expect N [--shard ID=DSN ...] [--join HOST:PORT ...] [options]",
			Flags:  agentFlags(),
			Action: a.runAgent,
		}},
	}
}

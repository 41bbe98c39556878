// Command harvestd runs a Harvest node.
//
//	harvestd dev [flags]
//	harvestd agent --shard ID=DSN [--shard ID=DSN …] [--join HOST:PORT] [flags]
//	harvestd agent --raft-addr HOST:PORT --bootstrap-expect N [--shard ID=DSN …] [--join HOST:PORT] [flags]
//
// dev runs one node serving one shard, on a managed PostgreSQL server under
// the data directory unless --postgres names an existing one. agent runs
// one node of a cluster: it gossips with the nodes it joins and serves the
// shards that the ring gives it. Without raft flags the shards are the
// static --shard catalog, the same on every node. Any raft flag
// (--raft-addr, --advertise-raft, --bootstrap-expect, --max-voters,
// --drain-check-interval) turns on the raft shard catalog instead, kept in
// the data directory (raft.db, snapshots/): --shard then seeds it when the
// cluster bootstraps, and shards are added and drained at run time
// (harvestctl shard). Both
// register the demo workflows (onboarding and order). Every flag can also
// be set through its HARVEST_* environment variable. SIGINT or SIGTERM
// stops the node gracefully (an agent releases its shard leases and leaves
// the cluster); a second signal kills the process at once.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/internal/pgserver"
	"github.com/harvestd/harvest/node"
)

// stopTimeout bounds the graceful stop: long enough to drain a result
// long-poll (capped at 30 s) and to stop the managed server.
const stopTimeout = 45 * time.Second

func main() {
	app := newApp()
	if err := app.Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "harvestd: "+oneLine(err))
		os.Exit(1)
	}
}

func newApp() *cli.App {
	return &cli.App{
		Name:  "harvestd",
		Usage: "the Harvest durable workflow server",
		// main prints the error once, in one line where it can.
		ExitErrHandler: func(*cli.Context, error) {},
		// A --shard DSN may contain commas; parseShards splits lists itself.
		DisableSliceFlagSeparator: true,
		Commands: []*cli.Command{{
			Name:   "dev",
			Usage:  "run one node with the demo workflows, on a managed PostgreSQL unless --postgres is set",
			Flags:  devFlags(),
			Action: runDev,
		}, {
			Name:  "agent",
			Usage: "run one cluster node with the demo workflows, serving its share of the shard databases (static --shard list or raft catalog)",
			UsageText: "harvestd agent --shard ID=DSN [--shard ID=DSN ...] [--join HOST:PORT ...] [options]\n" +
				"harvestd agent --raft-addr HOST:PORT --bootstrap-expect N [--shard ID=DSN ...] [--join HOST:PORT ...] [options]",
			Flags:  agentFlags(),
			Action: runAgent,
		}},
	}
}

// oneLine joins the lines of a multi-error (errors.Join, Validate).
func oneLine(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", "; ")
}

// run starts a node and serves until a signal or a server failure.
func run(ctx context.Context, cfg node.Config, reg *harvest.Registry, log zerolog.Logger) error {
	ctx, stopSignals := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	n, err := node.New(cfg, reg)
	if err != nil {
		return err
	}
	if err := n.Start(ctx); err != nil {
		if ctx.Err() != nil { // interrupted during start-up: not a failure
			log.Info().Msg("start interrupted by signal")
			return nil
		}
		return err
	}
	log = log.With().Str("node_id", n.NodeID()).Logger()
	ready := log.Info().Str("http_addr", n.Addr())
	if addr := n.GossipAddr(); addr != "" {
		ready = ready.Str("gossip_addr", addr)
	}
	ready.Msg("harvestd ready")
	var serveErr error
	select {
	case <-ctx.Done():
		log.Info().Msg("shutdown signal received, stopping")
	case serveErr = <-n.Err():
	}
	stopSignals() // a second signal kills the process at once
	stopCtx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	if err := n.Stop(stopCtx); err != nil {
		return errors.Join(serveErr, fmt.Errorf("stop: %w", err))
	}
	if serveErr != nil {
		return serveErr
	}
	log.Info().Msg("harvestd stopped")
	return nil
}

// explain turns the start-up failures a user can fix into one clear line.
func explain(err error, cfg node.Config) error {
	switch {
	case errors.Is(err, pgserver.ErrNoBinaries):
		where := "on PATH or in /usr/lib/postgresql/*/bin"
		if cfg.PGBinDir != "" {
			where = "in " + cfg.PGBinDir + " (--" + flagPGBinDir + ")"
		}
		return &hintError{err: err, msg: "no PostgreSQL binaries (initdb, postgres) found " + where +
			": install PostgreSQL (e.g. apt-get install postgresql), point --" + flagPGBinDir +
			" at the directory holding them, or use --" + flagPostgres + " with an existing server"}
	case errors.Is(err, node.ErrDataDir):
		return &hintError{err: err, msg: err.Error() + " (choose another --" + flagDataDir + ")"}
	}
	return err
}

// hintError replaces an error's text with advice for the user.
type hintError struct {
	err error
	msg string
}

func (e *hintError) Error() string { return e.msg }
func (e *hintError) Unwrap() error { return e.err }

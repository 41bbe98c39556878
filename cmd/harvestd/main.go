// Command harvestd runs a Harvest node.
//
//	harvestd dev [flags]
//
// dev runs one node serving one shard with the demo workflows registered
// (onboarding and order), on a managed PostgreSQL server under the data
// directory unless --postgres names an existing one. Every flag can also be
// set through its HARVEST_* environment variable. SIGINT or SIGTERM stops
// the node gracefully; a second signal kills the process at once.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"

	"github.com/harvestd/harvest"
	"github.com/harvestd/harvest/demo"
	"github.com/harvestd/harvest/internal/pgserver"
	"github.com/harvestd/harvest/node"
)

// stopTimeout bounds the graceful stop: long enough to drain a result
// long-poll (capped at 30 s) and to stop the managed server.
const stopTimeout = 45 * time.Second

// Flag names.
const (
	flagDataDir           = "data-dir"
	flagHTTPAddr          = "http-addr"
	flagPostgres          = "postgres"
	flagPGBinDir          = "pg-bin-dir"
	flagNodeID            = "node-id"
	flagLogFormat         = "log-format"
	flagLogLevel          = "log-level"
	flagIdempotencyWindow = "idempotency-window"
	flagMaxBodyBytes      = "max-body-bytes"
)

func main() {
	app := newApp()
	if err := app.Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "harvestd: "+err.Error())
		os.Exit(1)
	}
}

func newApp() *cli.App {
	return &cli.App{
		Name:  "harvestd",
		Usage: "the Harvest durable workflow server",
		// main prints the error once, in one line where it can.
		ExitErrHandler: func(*cli.Context, error) {},
		Commands: []*cli.Command{{
			Name:   "dev",
			Usage:  "run one node with the demo workflows, on a managed PostgreSQL unless --postgres is set",
			Flags:  devFlags(),
			Action: runDev,
		}},
	}
}

func devFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: flagDataDir, Value: node.DataDirDefault, EnvVars: []string{"HARVEST_DATA_DIR"},
			Usage: "directory for the node id and the managed PostgreSQL data"},
		&cli.StringFlag{Name: flagHTTPAddr, Value: node.HTTPAddrDefault, EnvVars: []string{"HARVEST_HTTP_ADDR"},
			Usage: "host:port of the HTTP API"},
		&cli.StringFlag{Name: flagPostgres, EnvVars: []string{"HARVEST_POSTGRES"},
			Usage: "DSN of an existing PostgreSQL database to use instead of the managed server"},
		&cli.StringFlag{Name: flagPGBinDir, EnvVars: []string{"HARVEST_PG_BIN_DIR"},
			Usage: "directory holding initdb and postgres for the managed server (default: PATH, then /usr/lib/postgresql/*/bin)"},
		&cli.StringFlag{Name: flagNodeID, EnvVars: []string{"HARVEST_NODE_ID"},
			Usage: "node id of the shard lease owner (default: kept in <data-dir>/node-id)"},
		&cli.StringFlag{Name: flagLogFormat, Value: "json", EnvVars: []string{"HARVEST_LOG_FORMAT"},
			Usage: "log format: json or console"},
		&cli.StringFlag{Name: flagLogLevel, Value: "info", EnvVars: []string{"HARVEST_LOG_LEVEL"},
			Usage: "log level: trace, debug, info, warn, error"},
		&cli.DurationFlag{Name: flagIdempotencyWindow, Value: node.IdempotencyWindowDefault, EnvVars: []string{"HARVEST_IDEMPOTENCY_WINDOW"},
			Usage: "how long a start idempotency key deduplicates"},
		&cli.Int64Flag{Name: flagMaxBodyBytes, Value: node.MaxBodyBytesDefault, EnvVars: []string{"HARVEST_MAX_BODY_BYTES"},
			Usage: "request body limit in bytes (larger bodies get 413)"},
	}
}

// runDev is the dev command: one node with the demo workflows.
func runDev(c *cli.Context) error {
	log, err := newLogger(c.String(flagLogFormat), c.String(flagLogLevel))
	if err != nil {
		return err
	}
	reg := harvest.NewRegistry()
	if err := demo.New(demo.NewServices()).Register(reg); err != nil {
		return fmt.Errorf("register demo workflows: %w", err)
	}
	cfg := node.Config{
		NodeID:            c.String(flagNodeID),
		DataDir:           c.String(flagDataDir),
		HTTPAddr:          c.String(flagHTTPAddr),
		PostgresDSN:       c.String(flagPostgres),
		PGBinDir:          c.String(flagPGBinDir),
		IdempotencyWindow: c.Duration(flagIdempotencyWindow),
		MaxBodyBytes:      c.Int64(flagMaxBodyBytes),
		Logger:            log,
	}
	if cfg.IdempotencyWindow <= 0 || cfg.MaxBodyBytes <= 0 {
		return fmt.Errorf("--%s and --%s must be positive", flagIdempotencyWindow, flagMaxBodyBytes)
	}
	return explain(run(c.Context, cfg, reg, log.With().Str("component", "harvestd").Logger()), cfg)
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
	log.Info().Str("http_addr", n.Addr()).Msg("harvestd ready")
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

// newLogger builds the root logger, writing to stderr.
func newLogger(format, level string) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(level)
	if err != nil || level == "" {
		return zerolog.Logger{}, fmt.Errorf("--%s %q: want trace, debug, info, warn or error", flagLogLevel, level)
	}
	var log zerolog.Logger
	switch format {
	case "json":
		log = zerolog.New(os.Stderr)
	case "console":
		log = zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr, TimeFormat: time.RFC3339})
	default:
		return zerolog.Logger{}, fmt.Errorf("--%s %q: want json or console", flagLogFormat, format)
	}
	return log.Level(lvl).With().Timestamp().Logger(), nil
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

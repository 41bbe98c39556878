package server

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

	"github.com/harvestd/harvest/internal/clusterkey"
	"github.com/harvestd/harvest/membership"
	"github.com/harvestd/harvest/node"
)

// stopTimeout bounds the graceful stop: long enough to drain a result
// long-poll (capped at 30 s) and to stop the managed server.
const stopTimeout = 45 * time.Second

// oneLine joins the lines of a multi-error (errors.Join, Validate).
func oneLine(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", "; ")
}

// reloadFiles are the files SIGHUP re-reads besides the TLS files ("":
// not given).
type reloadFiles struct {
	clusterKey string // --cluster-key-file
	gossipKey  string // --gossip-key-file
}

// run starts a node and serves until a signal or a server failure.
func (a *app) run(ctx context.Context, cfg node.Config, log zerolog.Logger, files reloadFiles) error {
	ctx, stopSignals := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	n, err := node.New(cfg, a.reg)
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
	ready.Msg("node ready")
	serveErr := serveUntilStop(ctx, n, log, files)
	stopSignals() // a second signal kills the process at once
	stopCtx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	if err := n.Stop(stopCtx); err != nil {
		return errors.Join(serveErr, fmt.Errorf("stop: %w", err))
	}
	if serveErr != nil {
		return serveErr
	}
	log.Info().Msg("node stopped")
	return nil
}

// serveUntilStop waits for a stop signal or a serve failure (returned);
// every SIGHUP meanwhile re-reads the cluster key file, the gossip key
// file and the TLS files.
func serveUntilStop(ctx context.Context, n *node.Node, log zerolog.Logger, files reloadFiles) error {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			log.Info().Msg("shutdown signal received, stopping")
			return nil
		case err := <-n.Err():
			return err
		case <-hup:
			reloadClusterKey(ctx, n, log, files.clusterKey)
			reloadGossipKey(n, log, files.gossipKey)
			reloadTLS(n, log)
		}
	}
}

// reloadClusterKey re-reads the cluster key file and rotates the node to
// it; a failure is logged and the node keeps its keys.
func reloadClusterKey(ctx context.Context, n *node.Node, log zerolog.Logger, keyFile string) {
	if keyFile == "" {
		log.Info().Msg("SIGHUP: no --" + flagClusterKeyFile + " to reload")
		return
	}
	key, err := clusterkey.Load(keyFile)
	if err == nil {
		err = n.RotateClusterKey(ctx, key)
	}
	if err != nil {
		log.Error().Err(err).Msg("SIGHUP: cluster key not reloaded; the node keeps its keys")
		return
	}
	log.Info().Int("keys", key.Len()).Msg("SIGHUP: cluster key reloaded")
}

// reloadGossipKey re-reads the gossip key file, if any, and rotates the
// gossip keyring to it; a failure is logged and the node keeps its keys.
func reloadGossipKey(n *node.Node, log zerolog.Logger, file string) {
	if file == "" {
		return
	}
	keys, err := membership.ParseGossipKeyFile(file)
	if err == nil {
		err = n.RotateGossipKey(keys)
	}
	if err != nil {
		log.Error().Err(err).Msg("SIGHUP: gossip keys not reloaded; the node keeps its keys")
		return
	}
	log.Info().Int("keys", len(keys)).Msg("SIGHUP: gossip keys reloaded")
}

// reloadTLS re-reads the TLS files; a failure is logged and the node
// keeps its certificate.
func reloadTLS(n *node.Node, log zerolog.Logger) {
	if err := n.ReloadTLS(); err != nil {
		log.Error().Err(err).Msg("SIGHUP: TLS files not reloaded; the node keeps its certificate")
	}
}

// explain turns the start-up failures a user can fix into one clear line.
func explain(err error, cfg node.Config) error {
	switch {
	case errors.Is(err, node.ErrNoPostgresBinaries):
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

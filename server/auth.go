package server

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/harvestd/harvest/auth"
	"github.com/harvestd/harvest/internal/clusterkey"
	"github.com/harvestd/harvest/node"
)

// Names of the authentication flags.
const (
	flagAuth             = "auth"
	flagInitialTokenFile = "initial-token-file"
	flagClusterKeyFile   = "cluster-key-file"
	flagNodeAuthV1       = "node-auth-v1"
)

// authFlags are the client authentication flags; mode is the command's
// default (off for dev, tokens for agent).
func authFlags(mode string) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: flagAuth, Value: mode, EnvVars: []string{"HARVEST_AUTH"},
			Usage: "client authentication: tokens (every route but /healthz, /readyz and the OpenAPI document needs a bearer token) or off (anyone may do anything: loopback only for dev)"},
		&cli.StringFlag{Name: flagInitialTokenFile, EnvVars: []string{"HARVEST_INITIAL_TOKEN_FILE"},
			Usage: "file holding an admin token you chose (hvt_<16 hex>_<64 hex>) that the node adds when missing; without it the first start with tokens writes a generated one to <data-dir>/bootstrap-token"},
	}
}

// clusterKeyFlag is the cluster credential flag of agent.
func clusterKeyFlag() cli.Flag {
	return &cli.StringFlag{Name: flagClusterKeyFile, EnvVars: []string{"HARVEST_CLUSTER_KEY_FILE"},
		Usage: "file holding the cluster key, base64 of 32 or more random bytes (openssl rand -base64 32), the same on every node: it authenticates every request and connection between nodes and, without --gossip-key, encrypts gossip (required). During a rotation it holds several keys, one a line: the first signs, all verify; SIGHUP re-reads it"}
}

// nodeAuthV1Flag is agent's flag of a rolling upgrade from a version
// that signs node requests in the v1 form only.
func nodeAuthV1Flag() cli.Flag {
	return &cli.BoolFlag{Name: flagNodeAuthV1, EnvVars: []string{"HARVEST_NODE_AUTH_V1"},
		Usage: "during a rolling upgrade from a version before node signatures v2 only: also accept requests between nodes signed in the v1 form " +
			"(which covers neither the body, the Idempotency-Key nor the receiving node), and sign this node's in both forms; " +
			"once every node runs this version, restart each without it"}
}

// authConfig reads the authentication flags into cfg.
func authConfig(c *cli.Context, cfg *node.Config) error {
	cfg.Auth = node.AuthConfig{Mode: c.String(flagAuth), InitialTokenFile: c.String(flagInitialTokenFile)}
	switch cfg.Auth.Mode {
	case node.AuthOff, node.AuthTokens:
	default:
		return fmt.Errorf("--%s %q: want %s or %s", flagAuth, cfg.Auth.Mode, node.AuthTokens, node.AuthOff)
	}
	return checkInitialTokenFile(cfg.Auth.InitialTokenFile)
}

// checkInitialTokenFile reads --initial-token-file now, so that a missing
// file or a malformed token stops the start instead of leaving a cluster
// without its admin token. Errors never quote the content.
func checkInitialTokenFile(path string) error {
	if path == "" {
		return nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("--%s: %w", flagInitialTokenFile, err)
	}
	if _, err := auth.Parse(strings.TrimSpace(string(raw))); err != nil {
		return fmt.Errorf("--%s %s: %w", flagInitialTokenFile, path, err)
	}
	return nil
}

// requireLoopbackWithoutAuth refuses --auth off on an address other
// nodes or users can reach.
func requireLoopbackWithoutAuth(cfg node.Config) error {
	if cfg.Auth.Mode != node.AuthOff || isLoopback(cfg.HTTPAddr) {
		return nil
	}
	return fmt.Errorf("--%s off lets anyone who reaches %s do anything: use it on a loopback --http-addr only, or run with --%s tokens",
		flagAuth, cfg.HTTPAddr, flagAuth)
}

func isLoopback(hostPort string) bool {
	host, _, err := net.SplitHostPort(hostPort)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// clusterKey reads --cluster-key-file.
func clusterKey(c *cli.Context) (clusterkey.Key, error) {
	path := c.String(flagClusterKeyFile)
	if path == "" {
		return clusterkey.Key{}, fmt.Errorf("--%s is required: every node of a cluster needs the same cluster key (create one with: openssl rand -base64 32 > cluster.key)", flagClusterKeyFile)
	}
	return clusterkey.Load(path)
}

package server

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/harvestd/harvest/membership"
	"github.com/harvestd/harvest/node"
)

// Names of the flags of agent only.
const (
	flagShard           = "shard"
	flagJoin            = "join"
	flagAdvertiseHTTP   = "advertise-http"
	flagAdvertiseClient = "advertise-client"
	flagGossipAddr      = "gossip-addr"
	flagAdvertiseGossip = "advertise-gossip"
	flagGossipKey       = "gossip-key"
	flagGossipKeyFile   = "gossip-key-file"
	flagGossipProfile   = "gossip-profile"
)

// gossipAddrDefault is the gossip bind address: every interface, on the
// conventional memberlist port.
var gossipAddrDefault = net.JoinHostPort(membership.BindAddrDefault, strconv.Itoa(membership.BindPortDefault))

func agentFlags() []cli.Flag {
	flags := append(append(nodeFlags(), authFlags(node.AuthTokens)...), clusterKeyFlag(), nodeAuthV1Flag(),
		&cli.StringSliceFlag{Name: flagShard, EnvVars: []string{"HARVEST_SHARD"},
			Usage: "shard of the catalog as id=DSN (id 0..65534); repeat it or separate entries with commas. " +
				"Without the raft catalog it is required and every node must list the same shards; with it, " +
				"the list seeds the catalog when the cluster bootstraps and a joining node learns the shards from the catalog"},
		&cli.StringSliceFlag{Name: flagJoin, EnvVars: []string{"HARVEST_JOIN"},
			Usage: "gossip host:port of a node to join; repeat it or separate addresses with commas (default: start a new cluster)"},
		&cli.StringFlag{Name: flagAdvertiseHTTP, EnvVars: []string{"HARVEST_ADVERTISE_HTTP"},
			Usage: "host:port other nodes forward API requests to (default: the bound --http-addr; required when that binds every interface)"},
		&cli.StringFlag{Name: flagAdvertiseClient, EnvVars: []string{"HARVEST_ADVERTISE_CLIENT"},
			Usage: "host:port clients reach this node's API at, for routing clients (GET /cluster/routing; default: --" + flagAdvertiseHTTP + ")"},
		&cli.StringFlag{Name: flagGossipAddr, Value: gossipAddrDefault, EnvVars: []string{"HARVEST_GOSSIP_ADDR"},
			Usage: "IP:port gossip listens on, TCP and UDP"},
		&cli.StringFlag{Name: flagAdvertiseGossip, EnvVars: []string{"HARVEST_ADVERTISE_GOSSIP"},
			Usage: "IP:port other nodes gossip with this one at (default: the bound --gossip-addr, or a private IP of this host when it binds every interface)"},
		&cli.StringFlag{Name: flagGossipKey, EnvVars: []string{"HARVEST_GOSSIP_KEY"},
			Usage: "base64 key of 16, 24 or 32 bytes that encrypts gossip (e.g. from openssl rand -base64 32); every node needs the same key (default: a key derived from the cluster key)"},
		&cli.StringFlag{Name: flagGossipKeyFile, EnvVars: []string{"HARVEST_GOSSIP_KEY_FILE"},
			Usage: "file of gossip keys as --" + flagGossipKey + " takes them, one a line: the first encrypts, all decrypt; SIGHUP re-reads it, so that gossip keys rotate with every node up (instead of --" + flagGossipKey + ")"},
		&cli.StringFlag{Name: flagGossipProfile, Value: membership.ProfileDefault, EnvVars: []string{"HARVEST_GOSSIP_PROFILE"},
			Usage: "gossip timings: lan, or local for loopback clusters and tests (faster failure detection)"},
	)
	return append(flags, raftFlags()...)
}

// runAgent is the agent command: one node of a cluster.
func (a *app) runAgent(c *cli.Context) error {
	cfg, err := nodeConfig(c)
	if err != nil {
		return err
	}
	if cfg.Raft, err = raftConfig(c); err != nil {
		return err
	}
	// With the raft catalog, --shard only seeds it.
	if shards := c.StringSlice(flagShard); cfg.Raft == nil || len(splitShardEntries(shards)) > 0 {
		if cfg.Shards, err = parseShards(shards); err != nil {
			return err
		}
	}
	if cfg.Gossip, err = gossipConfig(c); err != nil {
		return err
	}
	if cfg.ClusterKey, err = clusterKey(c); err != nil {
		return err
	}
	cfg.NodeAuthV1 = c.Bool(flagNodeAuthV1)
	if err := authConfig(c, &cfg); err != nil {
		return err
	}
	if cfg.Auth.Mode == node.AuthTokens && cfg.Raft == nil {
		return fmt.Errorf("--%s %s keeps tokens in the raft catalog, and this agent has static --%s lists: start a raft catalog (--%s) or, on a private network only, use --%s %s",
			flagAuth, node.AuthTokens, flagShard, flagBootstrapExpect, flagAuth, node.AuthOff)
	}
	cfg.AdvertiseHTTP, cfg.AdvertiseClient = c.String(flagAdvertiseHTTP), c.String(flagAdvertiseClient)
	if err := checkAdvertiseHTTP(cfg); err != nil {
		return err
	}
	return a.serve(c, cfg)
}

// parseShards reads the --shard entries into the catalog.
func parseShards(values []string) (map[uint16]string, error) {
	entries := splitShardEntries(values)
	if len(entries) == 0 {
		return nil, fmt.Errorf("--%s is required without the raft catalog: list every shard as id=DSN, the same on every node "+
			"(or start a raft catalog with --%s)", flagShard, flagBootstrapExpect)
	}
	shards := make(map[uint16]string, len(entries))
	for i, entry := range entries {
		id, dsn, err := parseShard(entry)
		if err != nil {
			return nil, fmt.Errorf("--%s entry %d: %w", flagShard, i+1, err)
		}
		if _, dup := shards[id]; dup {
			return nil, fmt.Errorf("--%s: shard %d is listed twice", flagShard, id)
		}
		shards[id] = dsn
	}
	return shards, nil
}

// splitShardEntries splits comma-separated lists of id=DSN entries. A comma
// starts a new entry only where an id and "=" follow it, so commas inside
// a DSN (multi-host URLs, passwords) stay where they are; blank entries
// are dropped.
func splitShardEntries(values []string) []string {
	var entries []string
	for _, v := range values {
		joinable := false // the last entry came from this value
		for _, piece := range strings.Split(v, ",") {
			switch {
			case strings.TrimSpace(piece) == "":
			case joinable && !startsShardEntry(piece):
				entries[len(entries)-1] += "," + piece
			default:
				entries = append(entries, piece)
				joinable = true
			}
		}
	}
	for i, e := range entries {
		entries[i] = strings.TrimSpace(e)
	}
	return entries
}

// startsShardEntry reports whether s begins with digits and then "=".
func startsShardEntry(s string) bool {
	idText, _, ok := strings.Cut(s, "=")
	idText = strings.TrimSpace(idText)
	return ok && idText != "" && strings.Trim(idText, "0123456789") == ""
}

// parseShard parses one id=DSN entry. Its errors never quote the DSN,
// which may hold a password.
func parseShard(entry string) (uint16, string, error) {
	if !startsShardEntry(entry) {
		return 0, "", fmt.Errorf("want id=DSN with a numeric shard id")
	}
	idText, dsn, _ := strings.Cut(entry, "=")
	id, err := strconv.ParseUint(strings.TrimSpace(idText), 10, 16)
	if err != nil || id == 0xFFFF {
		return 0, "", fmt.Errorf("shard id %s: want 0 to 65534", strings.TrimSpace(idText))
	}
	if dsn = strings.TrimSpace(dsn); dsn == "" {
		return 0, "", fmt.Errorf("shard %d: empty DSN", id)
	}
	return uint16(id), dsn, nil
}

// gossipConfig reads the gossip flags; the node fills in its id and
// metadata.
func gossipConfig(c *cli.Context) (*membership.Config, error) {
	var g membership.Config
	var err error
	if g.BindAddr, g.BindPort, err = ipPort(flagGossipAddr, c.String(flagGossipAddr)); err != nil {
		return nil, err
	}
	if adv := c.String(flagAdvertiseGossip); adv != "" {
		if g.AdvertiseAddr, g.AdvertisePort, err = ipPort(flagAdvertiseGossip, adv); err != nil {
			return nil, err
		}
	}
	if g.Join, err = parseJoin(c.StringSlice(flagJoin)); err != nil {
		return nil, err
	}
	if err := gossipKeys(c, &g); err != nil {
		return nil, err
	}
	switch g.Profile = c.String(flagGossipProfile); g.Profile {
	case membership.ProfileLAN, membership.ProfileLocal:
	default:
		return nil, fmt.Errorf("--%s %q: want %s or %s", flagGossipProfile, g.Profile, membership.ProfileLAN, membership.ProfileLocal)
	}
	return &g, nil
}

// gossipKeys reads --gossip-key or --gossip-key-file.
func gossipKeys(c *cli.Context, g *membership.Config) error {
	key, file := c.String(flagGossipKey), c.String(flagGossipKeyFile)
	switch {
	case key != "" && file != "":
		return fmt.Errorf("--%s and --%s exclude each other", flagGossipKey, flagGossipKeyFile)
	case key != "":
		var err error
		if g.GossipKey, err = membership.ParseGossipKey(key); err != nil {
			return fmt.Errorf("--%s: %w", flagGossipKey, err)
		}
	case file != "":
		keys, err := membership.ParseGossipKeyFile(file)
		if err != nil {
			return fmt.Errorf("--%s: %w", flagGossipKeyFile, err)
		}
		g.GossipKey, g.GossipKeys = keys[0], keys[1:]
	}
	return nil
}

// ipPort splits an IP:port flag value; gossip binds and advertises IP
// addresses, not host names.
func ipPort(flag, value string) (string, int, error) {
	host, port, err := hostPort(flag, value)
	if err != nil {
		return "", 0, err
	}
	if net.ParseIP(host) == nil {
		return "", 0, fmt.Errorf("--%s %q: %q is not an IP address", flag, value, host)
	}
	return host, port, nil
}

// hostPort splits a host:port flag value and checks the port.
func hostPort(flag, value string) (string, int, error) {
	host, portText, err := net.SplitHostPort(value)
	if err != nil {
		return "", 0, fmt.Errorf("--%s %q: want host:port", flag, value)
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return "", 0, fmt.Errorf("--%s %q: port %q is not a number from 0 to 65535", flag, value, portText)
	}
	return host, int(port), nil
}

// parseJoin reads the --join addresses, split at commas.
func parseJoin(values []string) ([]string, error) {
	var seeds []string
	for _, v := range values {
		for _, seed := range strings.Split(v, ",") {
			if seed = strings.TrimSpace(seed); seed == "" {
				continue
			}
			host, port, err := hostPort(flagJoin, seed)
			if err != nil {
				return nil, err
			}
			if host == "" || port == 0 {
				return nil, fmt.Errorf("--%s %q: want host:port with a host and a non-zero port", flagJoin, seed)
			}
			seeds = append(seeds, seed)
		}
	}
	return seeds, nil
}

// checkAdvertiseHTTP refuses to advertise a wildcard HTTP address: other
// nodes would forward requests to themselves.
func checkAdvertiseHTTP(cfg node.Config) error {
	if cfg.AdvertiseHTTP != "" {
		return nil
	}
	host, _, err := net.SplitHostPort(cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("--%s %q: want host:port", flagHTTPAddr, cfg.HTTPAddr)
	}
	if wildcard(host) {
		return fmt.Errorf("--%s %s binds every interface: set --%s to the host:port other nodes reach this one at",
			flagHTTPAddr, cfg.HTTPAddr, flagAdvertiseHTTP)
	}
	return nil
}

package server

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"

	"github.com/harvestd/harvest/api"
	"github.com/harvestd/harvest/engine"
	"github.com/harvestd/harvest/internal/tlsconf"
	"github.com/harvestd/harvest/node"
)

// Names of the flags every node command shares.
const (
	flagDataDir           = "data-dir"
	flagHTTPAddr          = "http-addr"
	flagNodeID            = "node-id"
	flagLogFormat         = "log-format"
	flagLogLevel          = "log-level"
	flagIdempotencyWindow = "idempotency-window"
	flagMaxBodyBytes      = "max-body-bytes"
	flagCallbackAllowCIDR = "callback-allow-cidr"
	flagActivityWorkers   = "activity-workers"
	flagStateCacheEntries = "state-cache-entries"
	flagStateCacheBytes   = "state-cache-bytes"
	flagRateLimit         = "rate-limit"
	flagRateBurst         = "rate-burst"
	flagMaxInFlight       = "max-in-flight"
	flagMaxLongPolls      = "max-long-polls"
	flagMaxLongPollsToken = "max-long-polls-per-token"
	flagStreamMemory      = "stream-memory"
	flagTLSCert           = "tls-cert"
	flagTLSKey            = "tls-key"
	flagTLSCA             = "tls-ca"
)

// Defaults of the logging flags.
const (
	logFormatDefault = "json"
	logLevelDefault  = "info"
)

// nodeFlags are the flags of every node command: identity, HTTP API, API
// limits and logging.
func nodeFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: flagDataDir, Value: node.DataDirDefault, EnvVars: []string{"HARVEST_DATA_DIR"},
			Usage: "directory for the node id (and, for dev, the managed PostgreSQL data; for agent with the raft catalog, raft.db and snapshots/)"},
		&cli.StringFlag{Name: flagHTTPAddr, Value: node.HTTPAddrDefault, EnvVars: []string{"HARVEST_HTTP_ADDR"},
			Usage: "host:port of the HTTP API"},
		&cli.StringFlag{Name: flagNodeID, EnvVars: []string{"HARVEST_NODE_ID"},
			Usage: "unique node id: the shard lease owner and gossip name (default: kept in <data-dir>/node-id)"},
		&cli.StringFlag{Name: flagLogFormat, Value: logFormatDefault, EnvVars: []string{"HARVEST_LOG_FORMAT"},
			Usage: "log format: json or console"},
		&cli.StringFlag{Name: flagLogLevel, Value: logLevelDefault, EnvVars: []string{"HARVEST_LOG_LEVEL"},
			Usage: "log level: trace, debug, info, warn, error"},
		&cli.DurationFlag{Name: flagIdempotencyWindow, Value: node.IdempotencyWindowDefault, EnvVars: []string{"HARVEST_IDEMPOTENCY_WINDOW"},
			Usage: "how long a start idempotency key deduplicates"},
		&cli.Int64Flag{Name: flagMaxBodyBytes, Value: node.MaxBodyBytesDefault, EnvVars: []string{"HARVEST_MAX_BODY_BYTES"},
			Usage: "request body limit in bytes (larger bodies get 413)"},
		&cli.Float64Flag{Name: flagRateLimit, EnvVars: []string{"HARVEST_RATE_LIMIT"},
			Usage: "requests per second each token may send (a token bucket; over it: 429 with Retry-After; " +
				"without --auth tokens per client address); 0 turns it off (default)"},
		&cli.IntFlag{Name: flagRateBurst, EnvVars: []string{"HARVEST_RATE_BURST"},
			Usage: "requests a token may send at once after being idle (default: --rate-limit rounded up)"},
		&cli.IntFlag{Name: flagMaxInFlight, Value: api.MaxInFlightDefault, EnvVars: []string{"HARVEST_MAX_IN_FLIGHT"},
			Usage: "most ordinary requests this node serves at once (one more: 503 overloaded with Retry-After)"},
		&cli.IntFlag{Name: flagMaxLongPolls, Value: api.MaxLongLivedDefault, EnvVars: []string{"HARVEST_MAX_LONG_POLLS"},
			Usage: "most long polls (?wait=) and event streams this node holds at once, apart from --max-in-flight"},
		&cli.IntFlag{Name: flagMaxLongPollsToken, Value: api.MaxLongLivedPerTokenDefault, EnvVars: []string{"HARVEST_MAX_LONG_POLLS_PER_TOKEN"},
			Usage: "most long polls and event streams one token holds on this node at once (one more: 429 too_many_long_polls with Retry-After)"},
		&cli.Int64Flag{Name: flagStreamMemory, Value: api.StreamMemoryDefault, EnvVars: []string{"HARVEST_STREAM_MEMORY"},
			Usage: "bytes of history this node's event streams hold at once, however many they are (pages of up to 4 MiB, a sixteenth of this; streams wait for room); at least 2 MiB"},
		&cli.StringFlag{Name: flagTLSCert, EnvVars: []string{"HARVEST_TLS_CERT"},
			Usage: "PEM certificate of this node: the HTTP API serves TLS, forwarding uses https and raft runs over TLS (with --tls-key; every node or none)"},
		&cli.StringFlag{Name: flagTLSKey, EnvVars: []string{"HARVEST_TLS_KEY"},
			Usage: "PEM key of --tls-cert"},
		&cli.StringFlag{Name: flagTLSCA, EnvVars: []string{"HARVEST_TLS_CA"},
			Usage: "PEM CA that signs the nodes' certificates: peers are verified against it (mutual TLS for raft; the API verifies a client certificate when given)"},
		&cli.IntFlag{Name: flagActivityWorkers, Value: engine.ActivityWorkersDefault, EnvVars: []string{"HARVEST_ACTIVITY_WORKERS"},
			Usage: "most activities each shard runs at once"},
		&cli.IntFlag{Name: flagStateCacheEntries, Value: engine.StateCacheEntriesDefault, EnvVars: []string{"HARVEST_STATE_CACHE_ENTRIES"},
			Usage: "most workflow runs whose live state each shard keeps between tasks (0 turns the cache off: every task replays the whole history)"},
		&cli.Int64Flag{Name: flagStateCacheBytes, Value: engine.StateCacheBytesDefault, EnvVars: []string{"HARVEST_STATE_CACHE_BYTES"},
			Usage: "bound of each shard's state cache: bytes of event data its runs applied"},
		&cli.StringSliceFlag{Name: flagCallbackAllowCIDR, EnvVars: []string{"HARVEST_CALLBACK_ALLOW_CIDR"},
			Usage: "address range (CIDR, e.g. 10.0.0.0/8) that completion callbacks may reach although it is private, " +
				"loopback or link-local; repeat it or separate ranges with commas (default: none)"},
		&cli.IntFlag{Name: flagGCPercent, Value: gcPercentDefault, EnvVars: []string{"HARVEST_GC_PERCENT"},
			Usage: "Go collector target: the heap grows by this percentage of what is live before a collection " +
				"(GOGC in the environment wins)"},
		&cli.StringFlag{Name: flagMemoryLimit, Value: "0", EnvVars: []string{"HARVEST_MEMORY_LIMIT"},
			Usage: "Go runtime soft memory limit, e.g. 1536MiB or 2GiB (suffixes B, KiB, MiB, GiB, TiB): near it the collector runs " +
				"and freed memory goes back to the system; set it below the container's memory (GOMEMLIMIT in the environment wins; 0: none)"},
		&cli.StringFlag{Name: flagPprofAddr, EnvVars: []string{"HARVEST_PPROF_ADDR"},
			Usage: "host:port to serve Go's profiler (/debug/pprof/) on, e.g. 127.0.0.1:6060 (default: off; keep it on loopback)"},
	}
}

// nodeConfig reads the flags of nodeFlags into a node config whose Logger
// is the root logger.
func nodeConfig(c *cli.Context) (node.Config, error) {
	log, err := newLogger(c.String(flagLogFormat), c.String(flagLogLevel))
	if err != nil {
		return node.Config{}, err
	}
	cfg := node.Config{
		NodeID:            c.String(flagNodeID),
		DataDir:           c.String(flagDataDir),
		HTTPAddr:          c.String(flagHTTPAddr),
		IdempotencyWindow: c.Duration(flagIdempotencyWindow),
		MaxBodyBytes:      c.Int64(flagMaxBodyBytes),
		ActivityWorkers:   c.Int(flagActivityWorkers),
		StateCacheEntries: stateCacheEntries(c.Int(flagStateCacheEntries)),
		StateCacheBytes:   c.Int64(flagStateCacheBytes),
		Limits: api.Limits{Rate: c.Float64(flagRateLimit), Burst: c.Int(flagRateBurst),
			MaxInFlight: c.Int(flagMaxInFlight), MaxLongLived: c.Int(flagMaxLongPolls), MaxLongLivedPerToken: c.Int(flagMaxLongPollsToken),
			StreamMemory: c.Int64(flagStreamMemory)},
		Logger: log,
	}
	if cfg.IdempotencyWindow <= 0 || cfg.MaxBodyBytes <= 0 || cfg.ActivityWorkers <= 0 {
		return node.Config{}, fmt.Errorf("--%s, --%s and --%s must be positive", flagIdempotencyWindow, flagMaxBodyBytes, flagActivityWorkers)
	}
	if c.Int(flagStateCacheEntries) < 0 || cfg.StateCacheBytes <= 0 {
		return node.Config{}, fmt.Errorf("--%s must not be negative and --%s must be positive", flagStateCacheEntries, flagStateCacheBytes)
	}
	if cfg.Limits.MaxInFlight <= 0 || cfg.Limits.MaxLongLived <= 0 || cfg.Limits.MaxLongLivedPerToken <= 0 {
		return node.Config{}, fmt.Errorf("--%s, --%s and --%s must be positive", flagMaxInFlight, flagMaxLongPolls, flagMaxLongPollsToken)
	}
	if cfg.Limits.StreamMemory < api.StreamMemoryMin {
		return node.Config{}, fmt.Errorf("--%s %d: want at least %d bytes", flagStreamMemory, cfg.Limits.StreamMemory, api.StreamMemoryMin)
	}
	if err := cfg.Limits.Validate(); err != nil {
		return node.Config{}, fmt.Errorf("--%s, --%s: %w", flagRateLimit, flagRateBurst, err)
	}
	if cfg.TLS, err = tlsFiles(c); err != nil {
		return node.Config{}, err
	}
	if cfg.CallbackAllowCIDRs, err = parseCIDRs(c.StringSlice(flagCallbackAllowCIDR)); err != nil {
		return node.Config{}, err
	}
	return cfg, nil
}

// stateCacheEntries maps --state-cache-entries to the engine's setting:
// 0 turns the cache off (the engine's negative).
func stateCacheEntries(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// parseCIDRs reads the --callback-allow-cidr values: CIDR prefixes (a bare
// address is a range of one), one a value or comma-separated; blank
// entries are dropped.
func parseCIDRs(values []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, v := range values {
		for _, entry := range strings.Split(v, ",") {
			entry = strings.TrimSpace(entry)
			if entry == "" {
				continue
			}
			p, err := netip.ParsePrefix(entry)
			if addr, aerr := netip.ParseAddr(entry); aerr == nil {
				p, err = netip.PrefixFrom(addr, addr.BitLen()), nil // one address
			}
			if err != nil {
				return nil, fmt.Errorf("--%s %q: want an address range like 10.0.0.0/8 or fd00::/8", flagCallbackAllowCIDR, entry)
			}
			if p != p.Masked() {
				return nil, fmt.Errorf("--%s %q: host bits are set; did you mean %s?", flagCallbackAllowCIDR, entry, p.Masked())
			}
			out = append(out, p)
		}
	}
	return out, nil
}

// serve runs a node of cfg with the binary's workflows until a signal.
func (a *app) serve(c *cli.Context, cfg node.Config) error {
	log := cfg.Logger.With().Str("component", a.opts.name).Logger()
	if err := setGCPercent(c, log); err != nil {
		return err
	}
	if err := setMemoryLimit(c, log); err != nil {
		return err
	}
	if addr := c.String(flagPprofAddr); addr != "" {
		ctx, cancel := context.WithCancel(c.Context)
		defer cancel()
		if err := servePprof(ctx, addr, log); err != nil {
			return err
		}
	}
	return explain(a.run(c.Context, cfg, log, reloadFiles{clusterKey: c.String(flagClusterKeyFile), gossipKey: c.String(flagGossipKeyFile)}), cfg)
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

// tlsFiles reads --tls-cert, --tls-key and --tls-ca (nil: no TLS).
func tlsFiles(c *cli.Context) (*tlsconf.Files, error) {
	f := tlsconf.Files{CertFile: c.String(flagTLSCert), KeyFile: c.String(flagTLSKey), CAFile: c.String(flagTLSCA)}
	switch {
	case f == tlsconf.Files{}:
		return nil, nil
	case f.CertFile == "" || f.KeyFile == "":
		return nil, fmt.Errorf("--%s and --%s go together (and --%s needs them)", flagTLSCert, flagTLSKey, flagTLSCA)
	}
	return &f, nil
}

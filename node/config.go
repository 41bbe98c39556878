package node

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"reflect"
	"strings"
	"time"
	"unicode"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/harvestd/harvest/api"
	"github.com/harvestd/harvest/engine"
	"github.com/harvestd/harvest/internal/clusterkey"
	"github.com/harvestd/harvest/internal/tlsconf"
	"github.com/harvestd/harvest/membership"
)

// Defaults of Config.
const (
	// DataDirDefault is the data directory, relative to the working
	// directory.
	DataDirDefault = ".harvest"
	// HTTPAddrDefault is the HTTP listen address.
	HTTPAddrDefault = "127.0.0.1:7233"
	// IdempotencyWindowDefault is how long a start idempotency key dedups.
	IdempotencyWindowDefault = engine.IdempotencyWindowDefault
	// MaxBodyBytesDefault is the HTTP request body limit.
	MaxBodyBytesDefault = api.MaxBodyBytesDefault
)

// Names inside the data directory and of the managed database.
const (
	// NodeIDFile is the file under DataDir that holds the node id.
	NodeIDFile = "node-id"
	// PostgresDir is the managed PostgreSQL data directory under DataDir.
	PostgresDir = "postgres"
	// DatabaseName is the database the node uses on the managed server.
	DatabaseName = "harvest"
)

// ErrNoClusterKey: Config.Gossip is set without a Config.ClusterKey.
var ErrNoClusterKey = errors.New("the cluster key is required with gossip")

// maxNodeIDLen bounds a node id; it is stored in the lease row and logged.
const maxNodeIDLen = 128

// Config configures one node. Zero fields take the defaults above.
type Config struct {
	// NodeID names this process as the shard lease owner. Default: the
	// content of DataDir/node-id, or a random id generated and written
	// there on first start, so a restart re-acquires its own lease at once.
	// It must not contain spaces or control characters.
	NodeID string
	// DataDir holds the node id file and the managed PostgreSQL data
	// (DataDir/postgres). Default DataDirDefault. It is created (mode 0755)
	// when missing.
	DataDir string
	// HTTPAddr is the host:port the HTTP API listens on; port 0 picks a
	// free port (see Node.Addr). Default HTTPAddrDefault.
	HTTPAddr string
	// PostgresDSN points the node at an existing PostgreSQL database whose
	// schema it migrates. Default empty: run a managed server under
	// DataDir/postgres with fsync on, listening on a unix socket and on
	// 127.0.0.1 with a free port, and use its database DatabaseName,
	// created when missing. Only this process's OS user can connect to it:
	// the password is in DataDir/postgres/harvest-password. The pool holds up to 32 connections unless the
	// DSN sets pool_max_conns.
	PostgresDSN string
	// PGBinDir is the directory holding initdb and postgres for the managed
	// server. Default: initdb on PATH, else the newest
	// /usr/lib/postgresql/*/bin. Unused when PostgresDSN is set.
	PGBinDir string
	// IdempotencyWindow is how long a start idempotency key dedups.
	// Default IdempotencyWindowDefault.
	IdempotencyWindow time.Duration
	// MaxBodyBytes limits HTTP request bodies; larger ones get 413.
	// Default MaxBodyBytesDefault.
	MaxBodyBytes int64
	// ShardID is the shard of a one-shard node (0..65534), used when
	// Shards is empty. Default 0.
	ShardID uint16
	// Shards is the static shard catalog of a cluster: shard id → DSN of
	// its database. Every node of a cluster must list the same shards.
	// Empty: one shard, ShardID, on PostgresDSN or the managed server.
	Shards map[uint16]string
	// Gossip enables cluster membership (hashicorp/memberlist). Nil runs
	// standalone: this node owns every shard. NodeID and Meta are filled
	// in by the node.
	Gossip *membership.Config
	// Raft enables the raft shard catalog (needs Gossip); nil keeps the
	// static Shards.
	Raft *RaftConfig
	// AdvertiseHTTP is the host:port other nodes forward requests to.
	// Default: the bound HTTP address.
	AdvertiseHTTP string
	// AdvertiseClient is the host:port clients reach this node's API at,
	// when that is not AdvertiseHTTP (a published port, a load balancer's
	// name): GET /cluster/routing names it, for routing clients. Default:
	// AdvertiseHTTP.
	AdvertiseClient string
	// ClusterKey is the cluster credential (harvestd --cluster-key-file),
	// the same on every node. It authenticates every node-to-node request
	// and connection: gossip (its encryption key is derived from it when
	// Gossip.GossipKey is unset), a member's gossip metadata, the raft
	// transport and forwarded HTTP requests. Required with Gossip
	// (ErrNoClusterKey); unused standalone. It replaces Gossip.ClusterKey.
	ClusterKey clusterkey.Key
	// NodeAuthV1 accepts node requests signed in the v1 form of older
	// versions and signs this node's in both forms (harvestd
	// --node-auth-v1): for a rolling upgrade from such a version only
	// (api.Config.NodeAuthV1). Default: the v2 form only.
	NodeAuthV1 bool
	// Auth configures how clients authenticate (default: off).
	Auth AuthConfig
	// TLS, when set, serves the HTTP API over TLS, forwards to other
	// nodes over HTTPS and runs the raft transport over mutual TLS, all
	// with these files (harvestd --tls-cert, --tls-key, --tls-ca). Every
	// node of a cluster must set it or none.
	TLS *tlsconf.Files
	// Limits shed the HTTP API's load: a per-token request rate and
	// in-flight limits (default: no rate limit, api.MaxInFlightDefault and
	// api.MaxLongLivedDefault).
	Limits api.Limits
	// CallbackAllowCIDRs exempts address ranges from the completion
	// callback SSRF block list (loopback, private, link-local, metadata).
	CallbackAllowCIDRs []netip.Prefix
	// PollInterval and LeaseTTL tune the shard engines (defaults: the
	// engine's); tests shrink them.
	PollInterval time.Duration
	LeaseTTL     time.Duration
	// ActivityWorkers bounds the concurrently running activities of each
	// shard engine (default: engine.ActivityWorkersDefault).
	ActivityWorkers int
	// StateCacheEntries and StateCacheBytes bound each shard engine's
	// cache of live workflow runs (default: engine.StateCacheEntriesDefault
	// and engine.StateCacheBytesDefault; StateCacheEntries negative turns
	// the cache off).
	StateCacheEntries int
	StateCacheBytes   int64
	// Logger is the root logger; every component logs through a child of
	// it. The zero Logger (the field left unset) is DefaultLogger: JSON
	// lines on stderr at info. Pass zerolog.Nop() to discard.
	Logger zerolog.Logger

	// wrapOutbound, when set (tests of this package only), wraps the
	// node's Outbound for its shard engines: a test can lose an answer or
	// hold an attempt of the outbox.
	wrapOutbound func(engine.Outbound) engine.Outbound
}

func (c Config) withDefaults() Config {
	c.DataDir = cmp.Or(c.DataDir, DataDirDefault)
	c.HTTPAddr = cmp.Or(c.HTTPAddr, HTTPAddrDefault)
	c.IdempotencyWindow = cmp.Or(c.IdempotencyWindow, IdempotencyWindowDefault)
	c.MaxBodyBytes = cmp.Or(c.MaxBodyBytes, MaxBodyBytesDefault)
	c.Auth = c.Auth.withDefaults()
	if isZeroLogger(c.Logger) {
		c.Logger = DefaultLogger()
	}
	return c
}

// DefaultLogger is the logger of a Config whose Logger is unset: JSON
// lines with a timestamp on os.Stderr (as it is when called), at info.
func DefaultLogger() zerolog.Logger {
	return zerolog.New(os.Stderr).Level(zerolog.InfoLevel).With().Timestamp().Logger()
}

// isZeroLogger reports whether l is the zero zerolog.Logger, which has no
// writer (zerolog.Nop() has one, and a disabled level).
func isZeroLogger(l zerolog.Logger) bool { return reflect.ValueOf(l).IsZero() }

// Validate reports every invalid field; zero fields are valid (they take
// their defaults).
func (c Config) Validate() error {
	var errs []error
	if c.NodeID != "" {
		errs = append(errs, checkNodeID(c.NodeID))
	}
	if c.HTTPAddr != "" {
		if _, _, err := net.SplitHostPort(c.HTTPAddr); err != nil {
			errs = append(errs, fmt.Errorf("http addr %q: %w", c.HTTPAddr, err))
		}
	}
	if c.PostgresDSN != "" {
		if _, err := pgxpool.ParseConfig(c.PostgresDSN); err != nil {
			errs = append(errs, fmt.Errorf("postgres dsn: %w", err))
		}
	}
	if c.IdempotencyWindow < 0 {
		errs = append(errs, errors.New("idempotency window must not be negative"))
	}
	if c.MaxBodyBytes < 0 {
		errs = append(errs, errors.New("max body bytes must not be negative"))
	}
	if err := c.Limits.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.ActivityWorkers < 0 {
		errs = append(errs, errors.New("activity workers must not be negative"))
	}
	if c.StateCacheBytes < 0 {
		errs = append(errs, errors.New("state cache bytes must not be negative"))
	}
	if c.ShardID == 0xFFFF {
		errs = append(errs, errors.New("shard id 65535 is reserved"))
	}
	for id, dsn := range c.Shards {
		if id == 0xFFFF {
			errs = append(errs, errors.New("shard id 65535 is reserved"))
		}
		if _, err := pgxpool.ParseConfig(dsn); err != nil {
			errs = append(errs, fmt.Errorf("dsn of shard %d: %w", id, err))
		}
	}
	if err := c.Auth.validate(c.Gossip != nil, c.Raft != nil); err != nil {
		errs = append(errs, err)
	}
	if c.Raft != nil && c.Gossip == nil {
		errs = append(errs, errors.New("the raft catalog needs gossip"))
	}
	if c.Gossip != nil && c.ClusterKey.IsZero() {
		errs = append(errs, ErrNoClusterKey)
	}
	if len(c.Shards) > 0 && c.PostgresDSN != "" {
		errs = append(errs, errors.New("set either shards or a postgres dsn, not both"))
	}
	if c.AdvertiseHTTP != "" {
		if _, _, err := net.SplitHostPort(c.AdvertiseHTTP); err != nil {
			errs = append(errs, fmt.Errorf("advertise http %q: %w", c.AdvertiseHTTP, err))
		}
	}
	if c.AdvertiseClient != "" {
		if _, _, err := net.SplitHostPort(c.AdvertiseClient); err != nil {
			errs = append(errs, fmt.Errorf("advertise client %q: %w", c.AdvertiseClient, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("node config: %w", err)
	}
	return nil
}

// checkNodeID accepts 1..maxNodeIDLen bytes of printable, non-space
// characters.
func checkNodeID(id string) error {
	if id == "" || len(id) > maxNodeIDLen {
		return fmt.Errorf("node id %q: must be 1 to %d bytes", id, maxNodeIDLen)
	}
	if i := strings.IndexFunc(id, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }); i >= 0 {
		return fmt.Errorf("node id %q: no spaces or control characters allowed", id)
	}
	return nil
}

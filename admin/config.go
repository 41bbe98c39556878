package admin

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"time"

	"github.com/hashicorp/raft"
	"github.com/rs/zerolog"

	"github.com/harvestd/harvest/internal/clusterkey"
	"github.com/harvestd/harvest/internal/tlsconf"
)

// Defaults of Config.
const (
	// MaxVotersDefault is the number of voters the leader keeps; joiners
	// beyond it become non-voters.
	MaxVotersDefault = 3
	// maxVotersLimit is the largest MaxVoters accepted.
	maxVotersLimit = 5
	// BindPortDefault is the conventional raft port (Consul's server RPC
	// port); Config does not fill it in, callers use it in their flags.
	BindPortDefault = 8300
	// ReconcileIntervalDefault is how often the loop re-checks membership
	// and bootstrap when nothing nudges it.
	ReconcileIntervalDefault = 2 * time.Second
	// snapshotRetain is how many file snapshots are kept.
	snapshotRetain = 2
	// raftDBFile is the log and stable store inside DataDir.
	raftDBFile = "raft.db"
)

// Config configures an Admin. Zero fields take the defaults above unless
// their documentation says otherwise.
type Config struct {
	// NodeID is this node's raft server id; it must equal the node's
	// gossip NodeID, because the leader matches gossip members to raft
	// servers by id. Required.
	NodeID string
	// DataDir holds raft's state: the bolt log and stable store
	// (raft.db) and file snapshots (snapshots/, the last 2 kept). It is
	// created when missing. Required.
	DataDir string
	// BindAddr is the host:port raft's TCP transport listens on. Port 0
	// picks a free port (for tests; read it back with Addr). Required.
	BindAddr string
	// AdvertiseAddr is the host:port other nodes reach raft at. Default:
	// the bound address, which must then not be 0.0.0.0.
	AdvertiseAddr string
	// BootstrapExpect, when positive, bootstraps a new cluster once that
	// many members with a raft address are alive in gossip (Consul's
	// bootstrap_expect). Every node of a new cluster should get the same
	// value; each computes the same initial configuration (the first
	// BootstrapExpect alive members by node id, all voters), so bootstrapping
	// on several nodes is safe. A node with raft state never bootstraps.
	// Zero never bootstraps: the node waits for the leader to add it.
	BootstrapExpect int
	// MaxVoters is how many voters the leader keeps: joiners become voters
	// while there are fewer, non-voters after that, and a non-voter is
	// promoted when a voter is removed. 1 to 5; default MaxVotersDefault.
	MaxVoters int
	// InitialShards is the static shard configuration (id to DSN). The
	// first leader that finds the catalog empty proposes it as Bootstrap:
	// every shard writable, epoch 1. Later changes go through commands.
	InitialShards map[uint16]string
	// Settings are the initial cluster settings proposed with
	// InitialShards. A zero IdempotencyWindow means
	// IdempotencyWindowDefault.
	Settings Settings
	// ReconcileInterval is the backstop period of the membership and
	// bootstrap loop, which otherwise runs on gossip and leadership
	// changes. Default ReconcileIntervalDefault.
	ReconcileInterval time.Duration
	// Raft overrides raft's configuration (tests shrink its timeouts).
	// Default raft.DefaultConfig(). Admin sets LocalID, Logger and
	// ShutdownOnRemove (false: a removed node keeps running so that it can
	// be added back) on a copy.
	Raft *raft.Config
	// ClusterKey is the cluster credential, the same on every node. The
	// raft transport authenticates every connection, both ways, with a
	// handshake under ClusterKey.Derive(clusterkey.LabelRaft): a peer
	// without the key can neither send raft RPCs to this node nor receive
	// its. Required.
	ClusterKey clusterkey.Key
	// TLS, when set, runs the raft transport over mutual TLS (the node's
	// certificate, peers verified against its CA) under the handshake.
	TLS *tlsconf.Material
	// Logger receives the admin's lines (component=admin) and raft's at
	// debug level. It should carry node_id. The zero Logger discards.
	Logger zerolog.Logger
}

func (c Config) withDefaults() Config {
	c.MaxVoters = cmp.Or(c.MaxVoters, MaxVotersDefault)
	c.ReconcileInterval = cmp.Or(c.ReconcileInterval, ReconcileIntervalDefault)
	c.Settings.IdempotencyWindow = cmp.Or(c.Settings.IdempotencyWindow, IdempotencyWindowDefault)
	c.InitialShards = maps.Clone(c.InitialShards)
	rc := raft.DefaultConfig()
	if c.Raft != nil {
		copied := *c.Raft
		rc = &copied
	}
	rc.LocalID = raft.ServerID(c.NodeID)
	rc.ShutdownOnRemove = false
	c.Raft = rc
	return c
}

// Validate reports every invalid field.
func (c Config) Validate() error {
	var errs []error
	if c.NodeID == "" {
		errs = append(errs, errors.New("node id is required"))
	}
	if c.DataDir == "" {
		errs = append(errs, errors.New("data dir is required"))
	}
	if c.ClusterKey.IsZero() {
		errs = append(errs, errors.New("cluster key is required (it authenticates the raft transport)"))
	}
	if _, _, err := net.SplitHostPort(c.BindAddr); err != nil {
		errs = append(errs, fmt.Errorf("bind addr %q: %w", c.BindAddr, err))
	}
	if c.AdvertiseAddr != "" {
		errs = append(errs, checkAdvertise(c.AdvertiseAddr))
	}
	maxVoters := cmp.Or(c.MaxVoters, MaxVotersDefault)
	if maxVoters < 1 || maxVoters > maxVotersLimit {
		errs = append(errs, fmt.Errorf("max voters %d: out of range 1..%d", c.MaxVoters, maxVotersLimit))
	}
	if c.BootstrapExpect < 0 || c.BootstrapExpect > maxVoters {
		errs = append(errs, fmt.Errorf("bootstrap expect %d: out of range 0..%d (max voters)", c.BootstrapExpect, maxVoters))
	}
	for _, id := range slices.Sorted(maps.Keys(c.InitialShards)) {
		errs = append(errs, checkShard(id, c.InitialShards[id]))
	}
	if c.Settings.IdempotencyWindow < 0 || c.ReconcileInterval < 0 {
		errs = append(errs, errors.New("idempotency window and reconcile interval must not be negative"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("admin config: %w", err)
	}
	return nil
}

func checkAdvertise(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("advertise addr %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		return fmt.Errorf("advertise addr %q: host must be a specific IP address", addr)
	}
	return nil
}

package membership

import (
	"cmp"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/hashicorp/memberlist"
	"github.com/rs/zerolog"

	"github.com/harvestd/harvest/internal/clusterkey"
)

// Defaults of Config.
const (
	// BindAddrDefault is the gossip bind address: every interface.
	BindAddrDefault = "0.0.0.0"
	// BindPortDefault is the conventional gossip port (TCP and UDP), the
	// one memberlist and Serf use. Config does not fill it in, because a
	// zero BindPort picks a free port; callers such as harvestd's flags
	// use it as their default.
	BindPortDefault = 7946
	// RejoinIntervalDefault is how often a node re-joins known peers while
	// it sees some of them dead (see Config.RejoinInterval).
	RejoinIntervalDefault = 2 * time.Second
	// LeaveTimeoutDefault bounds the graceful part of Stop.
	LeaveTimeoutDefault = 2 * time.Second
	// ReconnectTimeoutDefault is how long a dead or left member is kept
	// (and, if dead, re-joined) before it is forgotten; Serf's
	// reconnect_timeout.
	ReconnectTimeoutDefault = 24 * time.Hour
	// ProfileDefault is the memberlist timing profile.
	ProfileDefault = ProfileLAN
)

// Profiles of memberlist timings.
const (
	// ProfileLAN is memberlist.DefaultLANConfig: 1 s probes with a 500 ms
	// timeout, 200 ms gossip, 30 s push/pull, 10 s TCP timeout.
	ProfileLAN = "lan"
	// ProfileLocal is memberlist.DefaultLocalConfig, tuned for loopback and
	// tests: 200 ms probe timeout, 100 ms gossip, 1 s TCP timeout.
	ProfileLocal = "local"
)

// gossipKeySizes are the AES key sizes memberlist accepts.
var gossipKeySizes = []int{16, 24, 32}

// maxNodeIDLen bounds a node id; it is gossiped in every alive message.
const maxNodeIDLen = 128

// Config configures a Membership. Zero fields take the defaults above
// unless their documentation says otherwise.
type Config struct {
	// NodeID names this node in the cluster; it is also the memberlist
	// node name, so it must be unique and stable across restarts (a
	// restarted node with the same id and address takes its old place).
	// Required; 1 to 128 bytes without spaces or control characters.
	NodeID string
	// BindAddr is the IP address gossip listens on (TCP and UDP). Default
	// BindAddrDefault.
	BindAddr string
	// BindPort is the gossip port. 0 picks a free port (for tests; read it
	// back from Local().GossipAddr). Production callers pass
	// BindPortDefault or their flag's value.
	BindPort int
	// AdvertiseAddr is the IP address other nodes reach this one at.
	// Default: BindAddr, or when that is 0.0.0.0, a private IP of this
	// host chosen by memberlist (Start fails if there is none).
	AdvertiseAddr string
	// AdvertisePort is the port other nodes reach this one at; it needs
	// AdvertiseAddr (memberlist ignores it otherwise). Default: the bound
	// port.
	AdvertisePort int
	// Join lists "host:port" gossip addresses of nodes to join at Start.
	// Start does not wait for them: joining runs in the background,
	// retrying with backoff until one seed answers. Addresses equal to
	// this node's own advertised address are skipped. Empty: this node
	// starts a cluster of its own, which others join.
	Join []string
	// RejoinInterval is how often the node re-joins known addresses while
	// it sees fewer alive members than it knows (dead members, for
	// instance after a network partition) or fewer than len(Join). It
	// re-joins the Join seeds and the addresses of dead members;
	// memberlist does not heal a partition by itself once both sides
	// declared each other dead. Default RejoinIntervalDefault.
	RejoinInterval time.Duration
	// LeaveTimeout bounds the graceful part of Stop: announcing the
	// departure and waiting for memberlist's leave broadcast. Default
	// LeaveTimeoutDefault.
	LeaveTimeout time.Duration
	// ReconnectTimeout is how long a dead or left member stays in Members
	// (and, while dead, is re-joined) before it is forgotten. Default
	// ReconnectTimeoutDefault.
	ReconnectTimeout time.Duration
	// GossipKey enables gossip encryption and authentication (AES-GCM)
	// when set; it must be 16, 24 or 32 bytes (see ParseGossipKey). Nodes
	// with different keys cannot join each other. Default: with
	// ClusterKey set, ClusterKey.Derive(clusterkey.LabelGossip) (32 bytes,
	// AES-256); without, nil: no encryption.
	GossipKey []byte
	// GossipKeys are further gossip keys of an explicit GossipKey's
	// rotation: they decrypt, GossipKey alone encrypts (harvestd
	// --gossip-key-file: every line after the first). Ignored when
	// GossipKey is derived from ClusterKey.
	GossipKeys [][]byte
	// ClusterKey is the cluster credential, the same on every node. When
	// set, this node's metadata carries a member proof (an HMAC of its
	// id, addresses and version under
	// ClusterKey.Derive(clusterkey.LabelMember)), and a member whose
	// metadata carries no valid proof is refused: it never appears in
	// Members or Alive (see the package doc, "Cluster key"). It also
	// provides the default GossipKey. The zero Key (default) neither
	// proves nor checks: whoever can gossip is a member. harvestd nodes
	// always set it.
	ClusterKey clusterkey.Key
	// Meta is the metadata this node advertises. Meta.NodeID may be left
	// empty (it is set to NodeID) but must otherwise equal NodeID. Its
	// encoding must fit MetaMaxSize.
	Meta Meta
	// Profile selects memberlist's timings: ProfileLAN or ProfileLocal.
	// Default ProfileDefault.
	Profile string
	// Logger receives the membership's own lines (component=membership)
	// and memberlist's log output at debug level. It should carry node_id.
	// The zero Logger discards.
	Logger zerolog.Logger

	// gossipDerived is set by withDefaults when GossipKey comes from
	// ClusterKey (so that Rotate rotates it too).
	gossipDerived bool
	// tune, when set by tests, adjusts the memberlist configuration right
	// before the memberlist is created.
	tune func(*memberlist.Config)
	// joinAttempted, when set by tests, is called after every Join call
	// of the background loop with its result.
	joinAttempted func(contacted int, err error)
}

func (c Config) withDefaults() Config {
	c.BindAddr = cmp.Or(c.BindAddr, BindAddrDefault)
	c.RejoinInterval = cmp.Or(c.RejoinInterval, RejoinIntervalDefault)
	c.LeaveTimeout = cmp.Or(c.LeaveTimeout, LeaveTimeoutDefault)
	c.ReconnectTimeout = cmp.Or(c.ReconnectTimeout, ReconnectTimeoutDefault)
	c.Profile = cmp.Or(c.Profile, ProfileDefault)
	c.Meta.NodeID = cmp.Or(c.Meta.NodeID, c.NodeID)
	c.Join = append([]string(nil), c.Join...)
	c.GossipKey = append([]byte(nil), c.GossipKey...)
	c.GossipKeys = slices.Clone(c.GossipKeys)
	if len(c.GossipKey) == 0 && !c.ClusterKey.IsZero() {
		c.GossipKey = c.ClusterKey.Derive(clusterkey.LabelGossip)
		c.gossipDerived = true
	}
	return c
}

// memberKeys are the keys of member proofs, the signing one first; nil
// without a ClusterKey.
func (c Config) memberKeys() [][]byte { return c.ClusterKey.DeriveAll(clusterkey.LabelMember) }

// signKey is the key this node's member proof is made with.
func (c Config) signKey() []byte {
	if c.ClusterKey.IsZero() {
		return nil
	}
	return c.ClusterKey.Derive(clusterkey.LabelMember)
}

// gossipKeys is the gossip keyring, the primary first: every key of a
// ClusterKey rotation when GossipKey is derived from it, else GossipKey
// and GossipKeys.
func (c Config) gossipKeys() [][]byte {
	if c.gossipDerived {
		return c.ClusterKey.DeriveAll(clusterkey.LabelGossip)
	}
	return append([][]byte{c.GossipKey}, c.GossipKeys...)
}

// Validate reports every invalid field; zero fields other than NodeID are
// valid (they take their defaults).
func (c Config) Validate() error {
	var errs []error
	errs = append(errs, checkNodeID(c.NodeID))
	errs = append(errs, checkIP("bind addr", c.BindAddr), checkIP("advertise addr", c.AdvertiseAddr))
	errs = append(errs, checkPort("bind port", c.BindPort), checkPort("advertise port", c.AdvertisePort))
	if c.AdvertisePort != 0 && c.AdvertiseAddr == "" {
		errs = append(errs, errors.New("advertise port needs an advertise addr"))
	}
	for _, seed := range c.Join {
		if _, _, err := net.SplitHostPort(seed); err != nil {
			errs = append(errs, fmt.Errorf("join address %q: %w", seed, err))
		}
	}
	if c.RejoinInterval < 0 || c.LeaveTimeout < 0 || c.ReconnectTimeout < 0 {
		errs = append(errs, errors.New("rejoin interval, leave timeout and reconnect timeout must not be negative"))
	}
	if c.GossipKey != nil {
		errs = append(errs, checkGossipKey(c.GossipKey))
	}
	for _, k := range c.GossipKeys {
		errs = append(errs, checkGossipKey(k))
	}
	if len(c.GossipKeys) > 0 && c.GossipKey == nil {
		errs = append(errs, errors.New("gossip keys need a gossip key (the one that encrypts)"))
	}
	errs = append(errs, c.checkMeta(c.Meta))
	switch c.Profile {
	case "", ProfileLAN, ProfileLocal:
	default:
		errs = append(errs, fmt.Errorf("profile %q: want %q or %q", c.Profile, ProfileLAN, ProfileLocal))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("membership config: %w", err)
	}
	return nil
}

// checkMeta checks that m belongs to this node and that its encoding fits.
func (c Config) checkMeta(m Meta) error {
	if m.NodeID != "" && m.NodeID != c.NodeID {
		return fmt.Errorf("meta node id %q differs from node id %q", m.NodeID, c.NodeID)
	}
	m.NodeID = c.NodeID
	if _, err := encodeMeta(m, true, c.signKey()); err != nil {
		return fmt.Errorf("meta: %w", err)
	}
	return nil
}

func checkIP(name, ip string) error {
	if ip != "" && net.ParseIP(ip) == nil {
		return fmt.Errorf("%s %q: not an IP address", name, ip)
	}
	return nil
}

func checkPort(name string, port int) error {
	if port < 0 || port > 65535 {
		return fmt.Errorf("%s %d: out of range 0..65535", name, port)
	}
	return nil
}

// checkNodeID accepts 1..maxNodeIDLen bytes of printable, non-space
// characters.
func checkNodeID(id string) error {
	if id == "" || len(id) > maxNodeIDLen {
		return fmt.Errorf("node id %q: must be 1 to %d bytes", id, maxNodeIDLen)
	}
	if strings.IndexFunc(id, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) >= 0 {
		return fmt.Errorf("node id %q: no spaces or control characters allowed", id)
	}
	return nil
}

func checkGossipKey(key []byte) error {
	for _, n := range gossipKeySizes {
		if len(key) == n {
			return nil
		}
	}
	return fmt.Errorf("%w: %d bytes, want 16, 24 or 32", ErrInvalidGossipKey, len(key))
}

// ParseGossipKey decodes a standard base64 gossip key (as printed by
// `openssl rand -base64 32`) and checks its length. Errors wrap
// ErrInvalidGossipKey.
func ParseGossipKey(s string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidGossipKey, err)
	}
	if err := checkGossipKey(key); err != nil {
		return nil, err
	}
	return key, nil
}

// ParseGossipKeyFile reads a gossip key file (harvestd
// --gossip-key-file): one ParseGossipKey key a line, blank lines and
// lines starting with # ignored; the first encrypts, every one decrypts.
// Errors name the line, never a key, and wrap ErrInvalidGossipKey.
func ParseGossipKeyFile(path string) ([][]byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("gossip key file: %w", err)
	}
	var keys [][]byte
	for i, line := range strings.Split(string(raw), "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, err := ParseGossipKey(line)
		if err != nil {
			return nil, fmt.Errorf("gossip key file %s, line %d: %w", path, i+1, err)
		}
		keys = append(keys, key)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("gossip key file %s: %w: no key", path, ErrInvalidGossipKey)
	}
	return keys, nil
}

// memberlistConfig returns the memberlist configuration for c (defaults
// applied), without transport, delegates or logger.
func (c Config) memberlistConfig() *memberlist.Config {
	mc := memberlist.DefaultLANConfig()
	if c.Profile == ProfileLocal {
		mc = memberlist.DefaultLocalConfig()
	}
	mc.Name = c.NodeID
	mc.BindAddr = c.BindAddr
	mc.BindPort = c.BindPort
	mc.AdvertiseAddr = c.AdvertiseAddr
	mc.AdvertisePort = c.AdvertisePort
	if len(c.GossipKey) > 0 {
		// Validate checked the keys: NewKeyring cannot fail.
		mc.Keyring, _ = memberlist.NewKeyring(c.gossipKeys(), c.GossipKey)
	}
	return mc
}

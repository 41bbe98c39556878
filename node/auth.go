package node

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/harvestd/harvest/api"
	"github.com/harvestd/harvest/auth"
	"github.com/harvestd/harvest/internal/clusterkey"
	"github.com/harvestd/harvest/internal/tokenstore"
)

// Authentication modes (AuthConfig.Mode).
const (
	// AuthOff: every client may do everything. Keep such a node on
	// loopback.
	AuthOff = "off"
	// AuthTokens: every route but health, readiness and the OpenAPI
	// document needs a bearer token of the route's scope.
	AuthTokens = "tokens"
)

// Defaults of AuthConfig.
const (
	// TokenStaleAfterDefault: a raft follower refuses tokens (503) unless
	// it has applied the catalog as far as the leader had, by an answer of
	// the leader at most this old (see leaderIndex), rather than trust a
	// token table that may miss a revocation.
	TokenStaleAfterDefault = 15 * time.Second
	// BootstrapTokenFile is the file under DataDir that receives the
	// generated admin token of a first start without an initial token.
	BootstrapTokenFile = "bootstrap-token"
	// initialTokenName names the operator's initial token in lists.
	initialTokenName = "initial"
)

// AuthConfig configures how clients authenticate. Zero fields take the
// defaults above.
type AuthConfig struct {
	// Mode is AuthOff or AuthTokens. Default AuthOff. Tokens need a
	// place to live: the raft catalog, or a node without gossip (its
	// shard database); gossip on static shards cannot use them.
	Mode string
	// InitialTokenFile holds an operator-chosen admin token
	// ("hvt_<16 hex>_<64 hex>", Consul's initial management token),
	// which the node (in a cluster: the leader) adds when missing. Without
	// it, the first start that finds no token creates one and writes it
	// to DataDir/BootstrapTokenFile (mode 0600).
	InitialTokenFile string
	// StaleAfter: default TokenStaleAfterDefault.
	StaleAfter time.Duration
}

func (c AuthConfig) validate(gossip, raft bool) error {
	switch c.Mode {
	case "", AuthOff:
		return nil
	case AuthTokens:
	default:
		return fmt.Errorf("auth mode %q: want %s or %s", c.Mode, AuthOff, AuthTokens)
	}
	if gossip && !raft {
		return errors.New("auth mode tokens needs the raft catalog to keep tokens in: a cluster on static shards cannot use it")
	}
	return nil
}

func (c AuthConfig) on() bool { return c.Mode == AuthTokens }

func (c AuthConfig) withDefaults() AuthConfig {
	if c.StaleAfter <= 0 {
		c.StaleAfter = TokenStaleAfterDefault
	}
	return c
}

// tokenBackend is where this node's tokens live.
type tokenBackend interface {
	api.TokenAdmin
	auth.Source
	// ensure adds the initial token, or creates the bootstrap token when
	// there is none at all.
	ensure(ctx context.Context) error
}

// readInitialToken reads the operator's token file: the whole token and
// its record.
func readInitialToken(path string, now time.Time) (string, auth.Token, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", auth.Token{}, fmt.Errorf("read initial token: %w", err)
	}
	full := strings.TrimSpace(string(raw))
	id, err := auth.Parse(full)
	if err != nil {
		return "", auth.Token{}, fmt.Errorf("initial token file %s: %w", path, err)
	}
	return full, auth.Record(full, id, auth.Spec{Name: initialTokenName, Scope: auth.ScopeAdmin}, now), nil
}

// writeBootstrapToken writes a generated admin token where only this
// process's user can read it, and returns the file's path.
func writeBootstrapToken(dataDir, full string) (string, error) {
	path := filepath.Join(dataDir, BootstrapTokenFile)
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("replace bootstrap token: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("write bootstrap token: %w", err)
	}
	_, err = f.WriteString(full + "\n")
	return path, errors.Join(err, f.Close())
}

// startTokens opens the token table when authentication is on: the raft
// catalog's (the leader adds the first token, see raftTokens.ensure), or
// the shard database's, whose first token is added here.
func (n *Node) startTokens(ctx context.Context) error {
	if !n.cfg.Auth.on() {
		return nil
	}
	log := n.logger("auth")
	if n.admin != nil {
		n.tokens = &raftTokens{a: n.admin, leader: n.catalogIndex(ctx), cfg: n.cfg.Auth, dataDir: n.cfg.DataDir, log: log, secure: n.tls != nil}
		return nil
	}
	store, err := tokenstore.Load(ctx, n.pools[slices.Min(slices.Collect(maps.Keys(n.pools)))])
	if err != nil {
		return err
	}
	local := &localTokens{store: store, cfg: n.cfg.Auth, dataDir: n.cfg.DataDir, log: log}
	if err := local.ensure(ctx); err != nil {
		return err
	}
	n.tokens = local
	return nil
}

// tokensReady is the readiness check of a raft token table: not ready
// until it is known to be current. Nil otherwise.
func (n *Node) tokensReady() func() error {
	rt, ok := n.tokens.(*raftTokens)
	if !ok {
		return nil
	}
	return func() error {
		if !rt.leader.current(rt.a, time.Now(), rt.cfg.StaleAfter) {
			return errors.New("the token table is catching up with the raft leader")
		}
		return nil
	}
}

// ensureTokens lets the raft leader add the first token.
func (n *Node) ensureTokens(ctx context.Context) {
	if n.tokens == nil {
		return
	}
	if err := n.tokens.ensure(ctx); err != nil {
		log := n.logger("auth")
		log.Warn().Err(err).Msg("initial token not added yet")
	}
}

// apiAuth fills the API's authentication: the token verifier and admin,
// and the key that signs requests between nodes.
func (n *Node) apiAuth(cfg *api.Config) {
	if n.tokens != nil {
		cfg.Verifier, cfg.Tokens = auth.NewVerifier(n.tokens), n.tokens
	}
	if !n.cfg.ClusterKey.IsZero() {
		cfg.NodeKey = n.cfg.ClusterKey.Derive(clusterkey.LabelHTTP)
		cfg.NodeVerifyKeys = n.cfg.ClusterKey.DeriveAll(clusterkey.LabelHTTP)
	}
	cfg.NodeAuthV1 = n.cfg.NodeAuthV1
}

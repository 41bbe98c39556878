package node

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/harvestd/harvest/admin"
	"github.com/harvestd/harvest/api"
	"github.com/harvestd/harvest/auth"
)

// raftTokens keeps a cluster's tokens in the raft catalog: every node
// verifies against its own replica, which a revocation reaches when the
// node applies it; a follower whose catalog is not known to be current
// (see leaderIndex) refuses tokens (auth.ErrStale).
type raftTokens struct {
	secure  bool // leader URLs are https
	a       *admin.Admin
	leader  *leaderIndex
	cfg     AuthConfig
	dataDir string
	log     zerolog.Logger
	// ensured is set once the leader has the initial or bootstrap token.
	mu      sync.Mutex
	ensured bool
}

var _ tokenBackend = (*raftTokens)(nil)

func (r *raftTokens) Token(id string) (auth.Token, bool, error) {
	if !r.leader.current(r.a, time.Now(), r.cfg.StaleAfter) {
		return auth.Token{}, false, auth.ErrStale
	}
	t, ok := r.a.Catalog().Tokens[id]
	return t, ok, nil
}

func (r *raftTokens) CreateToken(ctx context.Context, spec auth.Spec) (string, auth.Token, error) {
	full, t := auth.New(spec, time.Now())
	if err := r.apply(ctx, admin.PutToken{Token: t}); err != nil {
		return "", auth.Token{}, err
	}
	r.log.Info().Str("token_id", t.ID).Str("scope", t.Scope.String()).Msg("token created")
	return full, t, nil
}

func (r *raftTokens) Tokens(context.Context) ([]auth.Token, error) {
	return auth.Sorted(r.a.Catalog().Tokens), nil
}

func (r *raftTokens) RevokeToken(ctx context.Context, id string) (auth.Token, error) {
	if err := r.apply(ctx, admin.RevokeToken{ID: id}); err != nil {
		return auth.Token{}, err
	}
	r.log.Info().Str("token_id", id).Msg("token revoked")
	return r.a.Catalog().Tokens[id], nil
}

// apply proposes cmd; a follower answers *api.LeaderError (forwarded).
func (r *raftTokens) apply(ctx context.Context, cmd admin.Command) error {
	err := r.a.Apply(ctx, cmd)
	if errors.Is(err, admin.ErrUnknownToken) {
		return fmt.Errorf("%w: %v", api.ErrUnknownToken, err)
	}
	return proposalErr(err, r.secure)
}

// ensure runs on the leader: it adds the operator's initial token when
// missing or, with none configured and no token at all, creates the
// bootstrap token. Followers do nothing.
func (r *raftTokens) ensure(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ensured || !r.a.IsLeader() || r.a.Catalog().Empty() {
		return nil
	}
	err := r.ensureLocked(ctx)
	r.ensured = err == nil
	return err
}

func (r *raftTokens) ensureLocked(ctx context.Context) error {
	if r.cfg.InitialTokenFile != "" {
		_, t, err := readInitialToken(r.cfg.InitialTokenFile, time.Now())
		if err != nil {
			return err
		}
		if _, ok := r.a.Catalog().Tokens[t.ID]; ok {
			return nil
		}
		return r.apply(ctx, admin.PutToken{Token: t})
	}
	if len(r.a.Catalog().Tokens) > 0 {
		return nil
	}
	full, _, err := r.CreateToken(ctx, auth.Spec{Name: "bootstrap", Scope: auth.ScopeAdmin})
	if err != nil {
		return err
	}
	path, err := writeBootstrapToken(r.dataDir, full)
	if err != nil {
		return err
	}
	r.log.Warn().Str("path", path).Msg("no token existed: created an admin token and wrote it to this file")
	return nil
}

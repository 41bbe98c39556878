package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/harvestd/harvest/api"
	"github.com/harvestd/harvest/auth"
	"github.com/harvestd/harvest/internal/tokenstore"
)

// localTokens keeps the tokens of a node without a raft catalog in its
// shard database.
type localTokens struct {
	store   *tokenstore.Store
	cfg     AuthConfig
	dataDir string
	log     zerolog.Logger
}

var _ tokenBackend = (*localTokens)(nil)

func (l *localTokens) Token(id string) (auth.Token, bool, error) { return l.store.Source().Token(id) }

func (l *localTokens) CreateToken(ctx context.Context, spec auth.Spec) (string, auth.Token, error) {
	full, t := auth.New(spec, time.Now())
	if err := l.store.Put(ctx, t); err != nil {
		return "", auth.Token{}, err
	}
	l.log.Info().Str("token_id", t.ID).Str("scope", t.Scope.String()).Msg("token created")
	return full, t, nil
}

func (l *localTokens) Tokens(context.Context) ([]auth.Token, error) { return l.store.List(), nil }

func (l *localTokens) RevokeToken(ctx context.Context, id string) (auth.Token, error) {
	t, err := l.store.Revoke(ctx, id, time.Now())
	if errors.Is(err, tokenstore.ErrUnknownToken) {
		return t, fmt.Errorf("%w: %s", api.ErrUnknownToken, id)
	}
	if err == nil {
		l.log.Info().Str("token_id", id).Msg("token revoked")
	}
	return t, err
}

func (l *localTokens) ensure(ctx context.Context) error {
	if l.cfg.InitialTokenFile != "" {
		_, t, err := readInitialToken(l.cfg.InitialTokenFile, time.Now())
		if err != nil {
			return err
		}
		return l.store.Put(ctx, t)
	}
	if l.store.Len() > 0 {
		return nil
	}
	full, _, err := l.CreateToken(ctx, auth.Spec{Name: "bootstrap", Scope: auth.ScopeAdmin})
	if err != nil {
		return err
	}
	path, err := writeBootstrapToken(l.dataDir, full)
	if err != nil {
		return err
	}
	l.log.Warn().Str("path", path).Msg("no token existed: created an admin token and wrote it to this file")
	return nil
}

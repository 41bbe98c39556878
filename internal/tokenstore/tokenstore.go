// Package tokenstore keeps the API tokens of a node without a raft
// catalog (harvestd dev --auth tokens) in its shard database, table
// harvest_tokens (migration 008). The node is the table's only writer:
// Load reads it once, and every change goes to the database first, then
// to the in-memory auth.Table requests are verified against.
package tokenstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/harvestd/harvest/auth"
)

var (
	// ErrUnknownToken: no token with that id.
	ErrUnknownToken = errors.New("unknown token")
	// ErrTokenExists: a token with that id exists with another secret.
	ErrTokenExists = errors.New("a token with that id exists")
)

// Store is the token table of one database.
type Store struct {
	pool  *pgxpool.Pool
	table *auth.Table
}

// Load reads every token of the database behind pool.
func Load(ctx context.Context, pool *pgxpool.Pool) (*Store, error) {
	rows, err := pool.Query(ctx, `SELECT id, name, scope, hash, created_at, expires_at, revoked_at FROM harvest_tokens`)
	if err != nil {
		return nil, fmt.Errorf("load tokens: %w", err)
	}
	tokens, err := pgx.CollectRows(rows, scanToken)
	if err != nil {
		return nil, fmt.Errorf("load tokens: %w", err)
	}
	return &Store{pool: pool, table: auth.NewTable(tokens)}, nil
}

func scanToken(row pgx.CollectableRow) (auth.Token, error) {
	var t auth.Token
	var scope string
	err := row.Scan(&t.ID, &t.Name, &scope, &t.Hash, &t.CreatedAt, &t.ExpiresAt, &t.RevokedAt)
	if err != nil {
		return t, err
	}
	t.Scope, err = auth.ParseScope(scope)
	return t, err
}

// Source is the table requests are verified against.
func (s *Store) Source() auth.Source { return s.table }

// Len is the number of tokens, revoked ones included.
func (s *Store) Len() int { return s.table.Len() }

// List returns every token, oldest first.
func (s *Store) List() []auth.Token { return s.table.List() }

// Put stores t. Putting a token held with the same hash changes nothing;
// another hash under the same id is ErrTokenExists.
func (s *Store) Put(ctx context.Context, t auth.Token) error {
	var hash string
	err := s.pool.QueryRow(ctx, `
		INSERT INTO harvest_tokens (id, name, scope, hash, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (id) DO UPDATE SET id = EXCLUDED.id
		RETURNING hash`,
		t.ID, t.Name, t.Scope.String(), t.Hash, t.CreatedAt, t.ExpiresAt).Scan(&hash)
	if err != nil {
		return fmt.Errorf("store token %s: %w", t.ID, err)
	}
	if hash != t.Hash {
		return fmt.Errorf("token %s: %w", t.ID, ErrTokenExists)
	}
	if _, ok, _ := s.table.Token(t.ID); !ok {
		s.table.Put(t)
	}
	return nil
}

// Revoke revokes the token id at now (a revoked token keeps its first
// time) and returns it.
func (s *Store) Revoke(ctx context.Context, id string, now time.Time) (auth.Token, error) {
	t, ok, _ := s.table.Token(id)
	if !ok {
		return auth.Token{}, fmt.Errorf("token %s: %w", id, ErrUnknownToken)
	}
	var at time.Time
	err := s.pool.QueryRow(ctx, `
		UPDATE harvest_tokens SET revoked_at = coalesce(revoked_at, $2)
		WHERE id = $1 RETURNING revoked_at`, id, now.UTC()).Scan(&at)
	if err != nil {
		return auth.Token{}, fmt.Errorf("revoke token %s: %w", id, err)
	}
	t.RevokedAt = &at
	s.table.Put(t)
	return t, nil
}

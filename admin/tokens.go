package admin

import (
	"fmt"
	"time"

	"github.com/harvestd/harvest/auth"
)

// PutToken adds an API token to the catalog. Putting a token the catalog
// holds with the same hash changes nothing, so every leader may propose
// the operator's initial token safely. Rejections: ErrTokenExists (same
// id, other hash), ErrInvalidCommand.
type PutToken struct {
	Token auth.Token `json:"token"`
	At    time.Time  `json:"at"`
}

// RevokeToken revokes a token by id at At; a revoked token stays revoked
// at its first time. Rejection: ErrUnknownToken.
type RevokeToken struct {
	ID string    `json:"id"`
	At time.Time `json:"at"`
}

var (
	_ Command = PutToken{}
	_ Command = RevokeToken{}
)

func (PutToken) Type() CommandType    { return CmdPutToken }
func (RevokeToken) Type() CommandType { return CmdRevokeToken }

func (p PutToken) stamped(now time.Time) Command    { p.At = stamp(p.At, now); return p }
func (r RevokeToken) stamped(now time.Time) Command { r.At = stamp(r.At, now); return r }

func (p PutToken) check() error {
	if p.Token.ID == "" || len(p.Token.Hash) != 64 || p.Token.Scope == auth.ScopeNone {
		return fmt.Errorf("token needs an id, a hash and a scope: %w", ErrInvalidCommand)
	}
	return nil
}

func (r RevokeToken) check() error {
	if r.ID == "" {
		return fmt.Errorf("revoke without a token id: %w", ErrInvalidCommand)
	}
	return nil
}

func (p PutToken) apply(c *Catalog) error {
	if old, ok := c.Tokens[p.Token.ID]; ok {
		if old.Hash != p.Token.Hash {
			return fmt.Errorf("token %s: %w", p.Token.ID, ErrTokenExists)
		}
		return nil
	}
	if c.Tokens == nil {
		c.Tokens = make(map[string]auth.Token)
	}
	c.Tokens[p.Token.ID] = p.Token
	return nil
}

func (r RevokeToken) apply(c *Catalog) error {
	t, ok := c.Tokens[r.ID]
	if !ok {
		return fmt.Errorf("token %s: %w", r.ID, ErrUnknownToken)
	}
	if t.RevokedAt == nil {
		at := r.At.UTC()
		t.RevokedAt = &at
		c.Tokens[r.ID] = t
	}
	return nil
}

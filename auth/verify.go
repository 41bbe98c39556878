package auth

import (
	"crypto/subtle"
	"fmt"
	"strings"
	"time"
)

// Identity is who a verified request acts as.
type Identity struct {
	// TokenID is the verified token's id; "" when authentication is off.
	TokenID string
	// Name is the verified token's name (for the audit trail); "" when
	// unnamed, when authentication is off, or when another node vouched
	// for the identity.
	Name  string
	Scope Scope
}

// Anonymous is the identity of every request when authentication is off:
// it may do everything.
var Anonymous = Identity{Scope: ScopeAdmin}

// Source is the token table as this node holds it.
type Source interface {
	// Token returns the token with id. It fails (ErrStale) when the table
	// may be out of date.
	Token(id string) (Token, bool, error)
}

// Verifier checks bearer tokens against a Source.
type Verifier struct {
	src Source
	now func() time.Time
}

// NewVerifier checks tokens against src at time.Now.
func NewVerifier(src Source) *Verifier { return &Verifier{src: src, now: time.Now} }

// Verify checks the value of an Authorization header ("Bearer <token>").
// Errors wrap ErrUnauthenticated and say why (ErrMissing, ErrMalformed,
// ErrUnknown, ErrExpired) or wrap ErrStale.
func (v *Verifier) Verify(header string) (Identity, error) {
	full, ok := bearer(header)
	if !ok {
		return Identity{}, fmt.Errorf("%w: %w", ErrUnauthenticated, ErrMissing)
	}
	t, err := v.lookup(full)
	if err != nil {
		return Identity{}, err
	}
	if t.ExpiresAt != nil && !v.now().Before(*t.ExpiresAt) {
		return Identity{}, fmt.Errorf("%w: %w", ErrUnauthenticated, ErrExpired)
	}
	return Identity{TokenID: t.ID, Name: t.Name, Scope: t.Scope}, nil
}

// lookup finds the unrevoked token full names, by id and hash.
func (v *Verifier) lookup(full string) (Token, error) {
	id, err := Parse(full)
	if err != nil {
		return Token{}, fmt.Errorf("%w: %w", ErrUnauthenticated, err)
	}
	t, ok, err := v.src.Token(id)
	if err != nil {
		return Token{}, err
	}
	if !ok || t.RevokedAt != nil || subtle.ConstantTimeCompare([]byte(t.Hash), []byte(Hash(full))) != 1 {
		return Token{}, fmt.Errorf("%w: %w", ErrUnauthenticated, ErrUnknown)
	}
	return t, nil
}

// bearer takes the token out of "Bearer <token>" (scheme case-insensitive).
func bearer(header string) (string, bool) {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

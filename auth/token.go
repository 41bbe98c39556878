package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
)

// Prefix starts every token.
const Prefix = "hvt_"

// Sizes of a token's parts, in hex digits.
const (
	idDigits     = 16
	secretDigits = 64
)

// tokenLen is the length of a whole token.
const tokenLen = len(Prefix) + idDigits + 1 + secretDigits

// Token is one stored token: everything but its secret.
type Token struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Scope Scope  `json:"scope"`
	// Hash is the hex SHA-256 of the whole token.
	Hash      string     `json:"hash"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

// Live reports whether t verifies at now: not revoked, not expired.
func (t Token) Live(now time.Time) bool {
	return t.RevokedAt == nil && (t.ExpiresAt == nil || now.Before(*t.ExpiresAt))
}

// Spec is what a new token is made of.
type Spec struct {
	Name  string
	Scope Scope
	// ExpiresAt is when it stops verifying; zero never.
	ExpiresAt time.Time
}

// New mints a token of spec at now: the whole token, shown once, and the
// record to store.
func New(spec Spec, now time.Time) (string, Token) {
	id, secret := randomHex(idDigits/2), randomHex(secretDigits/2)
	full := Prefix + id + "_" + secret
	return full, Record(full, id, spec, now)
}

// Record is the stored form of the whole token full, whose id is id.
func Record(full, id string, spec Spec, now time.Time) Token {
	t := Token{ID: id, Name: spec.Name, Scope: spec.Scope, Hash: Hash(full), CreatedAt: now.UTC()}
	if !spec.ExpiresAt.IsZero() {
		at := spec.ExpiresAt.UTC()
		t.ExpiresAt = &at
	}
	return t
}

// Parse checks the shape of a whole token and returns its id.
func Parse(full string) (id string, err error) {
	if len(full) != tokenLen || !strings.HasPrefix(full, Prefix) || full[len(Prefix)+idDigits] != '_' {
		return "", fmt.Errorf("%w: want %s<16 hex>_<64 hex>", ErrMalformed, Prefix)
	}
	id, secret := full[len(Prefix):len(Prefix)+idDigits], full[len(Prefix)+idDigits+1:]
	if !isHex(id) || !isHex(secret) {
		return "", fmt.Errorf("%w: want %s<16 hex>_<64 hex>", ErrMalformed, Prefix)
	}
	return id, nil
}

// Hash is the hex SHA-256 of a whole token.
func Hash(full string) string {
	sum := sha256.Sum256([]byte(full))
	return hex.EncodeToString(sum[:])
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}

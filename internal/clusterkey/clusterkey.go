// Package clusterkey holds the cluster credential: one secret, the same on
// every node of a cluster (harvestd --cluster-key-file), from which each
// node-to-node channel derives a key of its own with Derive — gossip
// encryption, the proof a member carries in its gossip metadata, the raft
// transport's handshake and the signature of node-to-node HTTP requests.
// A key derived for one channel tells nothing about the others.
//
// A rotation holds several keys (one a line of the key file): the first
// signs and proves (Derive), every one verifies (DeriveAll).
package clusterkey

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
)

// MinSize is the least number of bytes a cluster key has.
const MinSize = 32

// Labels of the derived keys, one per channel.
const (
	LabelGossip = "harvest gossip v1"
	LabelMember = "harvest member v1"
	LabelRaft   = "harvest raft v1"
	LabelHTTP   = "harvest http v1"
)

var (
	// ErrTooShort: the key decodes to fewer than MinSize bytes.
	ErrTooShort = errors.New("cluster key must be at least 32 bytes")
	// ErrNotBase64: the key file does not hold standard base64.
	ErrNotBase64 = errors.New("cluster key must be base64 (e.g. openssl rand -base64 32)")
)

// Key is a cluster key: one secret, or during a rotation several (a
// keyring). The first (primary) signs and proves; every one verifies.
// The zero Key is no key (IsZero).
type Key struct{ all [][]byte }

// Parse reads a key from its text form: one key a line, each standard
// base64 of at least MinSize bytes, the first the primary; blank lines,
// lines starting with '#' and surrounding white space are ignored.
// Errors name the line, never its content.
func Parse(text []byte) (Key, error) {
	var k Key
	for i, line := range strings.Split(string(text), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		raw, err := parseOne(line)
		if err != nil {
			return Key{}, fmt.Errorf("line %d: %w", i+1, err)
		}
		k.all = append(k.all, raw)
	}
	if k.IsZero() {
		return Key{}, ErrTooShort
	}
	return k, nil
}

func parseOne(line string) ([]byte, error) {
	raw, err := base64.StdEncoding.DecodeString(line)
	if err != nil {
		return nil, ErrNotBase64
	}
	if len(raw) < MinSize {
		return nil, ErrTooShort
	}
	return raw, nil
}

// Load reads the key file at path (see Parse). Errors name the path,
// never the content.
func Load(path string) (Key, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return Key{}, fmt.Errorf("read cluster key: %w", err)
	}
	k, err := Parse(text)
	if err != nil {
		return Key{}, fmt.Errorf("cluster key file %s: %w", path, err)
	}
	return k, nil
}

// FromBytes makes a key of raw (each at least MinSize bytes, the first
// the primary), for tests and embedders that hold the secrets themselves.
func FromBytes(raw ...[]byte) (Key, error) {
	var k Key
	for _, r := range raw {
		if len(r) < MinSize {
			return Key{}, ErrTooShort
		}
		k.all = append(k.all, bytes.Clone(r))
	}
	if k.IsZero() {
		return Key{}, ErrTooShort
	}
	return k, nil
}

// Len is how many keys k holds.
func (k Key) Len() int { return len(k.all) }

// Join is a keyring of k's keys followed by other's (duplicates dropped):
// k's primary stays the primary.
func (k Key) Join(other Key) Key {
	out := Key{all: slices.Clone(k.all)}
	for _, o := range other.all {
		if !slices.ContainsFunc(out.all, func(b []byte) bool { return bytes.Equal(b, o) }) {
			out.all = append(out.all, o)
		}
	}
	return out
}

// IsZero reports whether k is no key.
func (k Key) IsZero() bool { return len(k.all) == 0 }

// Derive returns the primary's 32-byte key of one channel:
// HMAC-SHA256(primary, label). It panics on the zero Key: a caller must
// check IsZero first.
func (k Key) Derive(label string) []byte {
	if k.IsZero() {
		panic("clusterkey: Derive on the zero key")
	}
	return derive(k.all[0], label)
}

// DeriveAll returns every key's key of one channel, the primary's first:
// what a receiver verifies with. Nil for the zero Key.
func (k Key) DeriveAll(label string) [][]byte {
	out := make([][]byte, 0, len(k.all))
	for _, raw := range k.all {
		out = append(out, derive(raw, label))
	}
	return out
}

func derive(raw []byte, label string) []byte {
	m := hmac.New(sha256.New, raw)
	m.Write([]byte(label))
	return m.Sum(nil)
}

// String never shows the secret.
func (k Key) String() string {
	if k.IsZero() {
		return "clusterkey(none)"
	}
	return fmt.Sprintf("clusterkey(%d set)", len(k.all))
}

// GoString never shows the secret either (%#v).
func (k Key) GoString() string { return k.String() }

// Package clusterkey holds the cluster credential: one secret, the same on
// every node of a cluster (harvestd --cluster-key-file), from which each
// node-to-node channel derives a key of its own with Derive — gossip
// encryption, the proof a member carries in its gossip metadata, the raft
// transport's handshake and the signature of node-to-node HTTP requests.
// A key derived for one channel tells nothing about the others.
package clusterkey

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
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

// Key is a cluster key. The zero Key is no key (IsZero).
type Key struct{ b []byte }

// Parse reads a key from its text form: standard base64 of at least
// MinSize bytes, surrounding white space ignored.
func Parse(text []byte) (Key, error) {
	raw, err := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(text)))
	if err != nil {
		return Key{}, ErrNotBase64
	}
	if len(raw) < MinSize {
		return Key{}, ErrTooShort
	}
	return Key{b: raw}, nil
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

// FromBytes makes a key of raw (at least MinSize bytes), for tests and
// embedders that hold the secret themselves.
func FromBytes(raw []byte) (Key, error) {
	if len(raw) < MinSize {
		return Key{}, ErrTooShort
	}
	return Key{b: bytes.Clone(raw)}, nil
}

// IsZero reports whether k is no key.
func (k Key) IsZero() bool { return len(k.b) == 0 }

// Derive returns the 32-byte key of one channel: HMAC-SHA256(key, label).
// It panics on the zero Key: a caller must check IsZero first.
func (k Key) Derive(label string) []byte {
	if k.IsZero() {
		panic("clusterkey: Derive on the zero key")
	}
	m := hmac.New(sha256.New, k.b)
	m.Write([]byte(label))
	return m.Sum(nil)
}

// String never shows the secret.
func (k Key) String() string {
	if k.IsZero() {
		return "clusterkey(none)"
	}
	return "clusterkey(set)"
}

// GoString never shows the secret either (%#v).
func (k Key) GoString() string { return k.String() }

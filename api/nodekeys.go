package api

import (
	"bytes"
	"crypto/hmac"
	"slices"
)

// nodeKeys are the keys of node requests: sign signs this node's, and a
// request signed with any of verify (sign included) is accepted. During a
// cluster key rotation verify also holds the other keys of the keyring
// (clusterkey.Key.DeriveAll).
type nodeKeys struct {
	sign   []byte
	verify [][]byte
}

func newNodeKeys(sign []byte, verify [][]byte) *nodeKeys {
	k := &nodeKeys{sign: bytes.Clone(sign)}
	if len(sign) > 0 {
		k.verify = append(k.verify, k.sign)
	}
	for _, v := range verify {
		if len(v) > 0 && !slices.ContainsFunc(k.verify, func(b []byte) bool { return bytes.Equal(b, v) }) {
			k.verify = append(k.verify, bytes.Clone(v))
		}
	}
	return k
}

// SetNodeKeys replaces the keys of node requests at once (a rotation,
// on SIGHUP): sign signs this node's requests from now on, and requests
// signed with sign or any of verify are accepted.
func (s *Server) SetNodeKeys(sign []byte, verify [][]byte) {
	s.nodeKeys.Store(newNodeKeys(sign, verify))
}

// keys are the current keys of node requests.
func (s *Server) keys() *nodeKeys {
	if k := s.nodeKeys.Load(); k != nil {
		return k
	}
	return newNodeKeys(s.cfg.NodeKey, s.cfg.NodeVerifyKeys)
}

// matches reports whether mac is the signature of msg under one of the
// keys (each compared in constant time).
func (k *nodeKeys) matches(mac string, sign func(key []byte) string) bool {
	ok := false
	for _, key := range k.verify {
		ok = hmac.Equal([]byte(mac), []byte(sign(key))) || ok
	}
	return ok
}

package membership

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"

	"github.com/hashicorp/memberlist"
)

// MetaMaxSize is the largest encoded node metadata memberlist gossips
// (memberlist.MetaMaxSize, 512 bytes). Config.Validate and UpdateMeta
// reject metadata whose encoding, including the internal leaving flag, is
// larger.
const MetaMaxSize = memberlist.MetaMaxSize

// Meta is what a node tells the cluster about itself. It travels as the
// memberlist node metadata, encoded as compact JSON.
type Meta struct {
	// NodeID is the node's id; it equals the memberlist node name.
	NodeID string
	// APIAddr is the host:port of the node's HTTP API.
	APIAddr string
	// RaftAddr is the host:port of the node's raft transport.
	RaftAddr string
	// Version is the harvestd version the node runs.
	Version string
	// ClientAddr is the host:port clients reach the API at, when it is not
	// APIAddr (harvestd --advertise-client; "": APIAddr).
	ClientAddr string
}

// wireMeta is the encoding of Meta. Keys are short because the whole
// encoding must fit MetaMaxSize; unknown keys are ignored on decode, so
// fields can be added without breaking older nodes.
//
// Leaving is set by Stop just before memberlist's Leave. memberlist v0.7.0
// does not tell an EventDelegate whether a node left or failed (the state
// it passes is always "alive", hashicorp/memberlist#293), so the leaving
// node announces it in its metadata and receivers classify its departure
// as StateLeft instead of StateDead.
type wireMeta struct {
	NodeID   string `json:"id"`
	APIAddr  string `json:"api,omitempty"`
	RaftAddr string `json:"raft,omitempty"`
	Version  string `json:"v,omitempty"`
	Client   string `json:"cli,omitempty"`
	Leaving  bool   `json:"leaving,omitempty"`
	Proof    string `json:"p,omitempty"`
}

// proofSize is the length of a member proof before its base64 encoding
// (22 characters): an HMAC-SHA256 truncated to 128 bits.
const proofSize = 16

// proofEncoding encodes member proofs in the metadata.
var proofEncoding = base64.RawURLEncoding

// memberProof is the proof a node gossips that it holds the cluster key:
// HMAC-SHA256 under key (ClusterKey.Derive(clusterkey.LabelMember)) of the
// node id (the memberlist node name), API address, raft address, version
// and leaving flag, each field length-prefixed so that no two metadata
// share an input, truncated to proofSize bytes. A client address, when
// set, is a fifth field (without one the proof is what nodes that know no
// client address compute).
func memberProof(key []byte, m Meta, leaving bool) []byte {
	mac := hmac.New(sha256.New, key)
	fields := []string{m.NodeID, m.APIAddr, m.RaftAddr, m.Version}
	if m.ClientAddr != "" {
		fields = append(fields, m.ClientAddr)
	}
	for _, field := range fields {
		mac.Write(binary.BigEndian.AppendUint32(nil, uint32(len(field))))
		mac.Write([]byte(field))
	}
	if leaving {
		mac.Write([]byte{1})
	} else {
		mac.Write([]byte{0})
	}
	return mac.Sum(nil)[:proofSize]
}

// verifyMeta reports whether the metadata b of the memberlist node name
// carries a valid member proof under key. The proof covers name, not the
// id inside the metadata, which decodeMeta ignores. The comparison is
// constant-time.
func verifyMeta(key []byte, name string, b []byte) bool {
	var w wireMeta
	if err := json.Unmarshal(b, &w); err != nil {
		return false
	}
	got, err := proofEncoding.DecodeString(w.Proof)
	if err != nil || len(got) != proofSize {
		return false
	}
	m := Meta{NodeID: name, APIAddr: w.APIAddr, RaftAddr: w.RaftAddr, Version: w.Version, ClientAddr: w.Client}
	return hmac.Equal(got, memberProof(key, m, w.Leaving))
}

// encodeMeta encodes m with the leaving flag and, when key is set, the
// member proof under key. It fails with a *MetaTooLargeError when the
// result, or the result with the leaving flag set, would not fit
// MetaMaxSize.
func encodeMeta(m Meta, leaving bool, key []byte) ([]byte, error) {
	worst, err := marshalMeta(m, true, key)
	if err != nil {
		return nil, err
	}
	if len(worst) > MetaMaxSize {
		return nil, &MetaTooLargeError{Size: len(worst), Limit: MetaMaxSize}
	}
	if leaving {
		return worst, nil
	}
	return marshalMeta(m, false, key)
}

func marshalMeta(m Meta, leaving bool, key []byte) ([]byte, error) {
	w := wireMeta{NodeID: m.NodeID, APIAddr: m.APIAddr, RaftAddr: m.RaftAddr, Version: m.Version, Client: m.ClientAddr,
		Leaving: leaving}
	if key != nil {
		w.Proof = proofEncoding.EncodeToString(memberProof(key, m, leaving))
	}
	return json.Marshal(w)
}

// decodeMeta decodes the metadata of the memberlist node name. NodeID is
// always name, whatever the metadata says. Metadata that does not decode
// (a foreign or corrupt peer) yields a Meta with only NodeID set.
func decodeMeta(name string, b []byte) (m Meta, leaving bool) {
	var w wireMeta
	if err := json.Unmarshal(b, &w); err != nil {
		return Meta{NodeID: name}, false
	}
	return Meta{NodeID: name, APIAddr: w.APIAddr, RaftAddr: w.RaftAddr, Version: w.Version, ClientAddr: w.Client}, w.Leaving
}

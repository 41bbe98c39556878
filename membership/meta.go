package membership

import (
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
	Leaving  bool   `json:"leaving,omitempty"`
}

// encodeMeta encodes m with the leaving flag. It fails with a
// *MetaTooLargeError when the result, or the result with the leaving flag
// set, would not fit MetaMaxSize.
func encodeMeta(m Meta, leaving bool) ([]byte, error) {
	w := wireMeta{NodeID: m.NodeID, APIAddr: m.APIAddr, RaftAddr: m.RaftAddr, Version: m.Version, Leaving: true}
	worst, err := json.Marshal(w)
	if err != nil {
		return nil, err
	}
	if len(worst) > MetaMaxSize {
		return nil, &MetaTooLargeError{Size: len(worst), Limit: MetaMaxSize}
	}
	if leaving {
		return worst, nil
	}
	w.Leaving = false
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
	return Meta{NodeID: name, APIAddr: w.APIAddr, RaftAddr: w.RaftAddr, Version: w.Version}, w.Leaving
}

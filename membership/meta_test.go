package membership

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/internal/clusterkey"
	"github.com/harvestd/harvest/internal/clusterkey/clusterkeytest"
)

func TestMemberProof(t *testing.T) {
	t.Parallel()
	key := clusterkeytest.Key().Derive(clusterkey.LabelMember)
	meta := Meta{NodeID: "n1", APIAddr: "10.0.0.1:7233", RaftAddr: "10.0.0.1:7234", Version: "1.2.3"}
	// rewrite decodes meta's encoding under key, lets mod change it and
	// encodes it again.
	withClient := meta
	withClient.ClientAddr = "203.0.113.7:443"
	rewriteOf := func(t *testing.T, m Meta, leaving bool, mod func(*wireMeta)) []byte {
		b, err := encodeMeta(m, leaving, key)
		require.NoError(t, err)
		var w wireMeta
		require.NoError(t, json.Unmarshal(b, &w))
		mod(&w)
		b, err = json.Marshal(w)
		require.NoError(t, err)
		return b
	}
	rewrite := func(t *testing.T, leaving bool, mod func(*wireMeta)) []byte { return rewriteOf(t, meta, leaving, mod) }
	otherKey := clusterkeytest.Other().Derive(clusterkey.LabelMember)
	wrongKey, err := encodeMeta(meta, false, otherKey)
	require.NoError(t, err)
	tests := []struct {
		name  string
		node  string // memberlist node name
		meta  []byte
		valid bool
	}{
		{name: "Valid", node: "n1", meta: rewrite(t, false, func(*wireMeta) {}), valid: true},
		{name: "ValidLeaving", node: "n1", meta: rewrite(t, true, func(*wireMeta) {}), valid: true},
		{name: "WrongKey", node: "n1", meta: wrongKey},
		{name: "TamperedAPIAddr", node: "n1", meta: rewrite(t, false, func(w *wireMeta) { w.APIAddr = "10.6.6.6:7233" })},
		{name: "TamperedRaftAddr", node: "n1", meta: rewrite(t, false, func(w *wireMeta) { w.RaftAddr = "10.6.6.6:7234" })},
		{name: "TamperedVersion", node: "n1", meta: rewrite(t, false, func(w *wireMeta) { w.Version = "9.9.9" })},
		{name: "ValidWithClientAddr", node: "n1", meta: rewriteOf(t, withClient, false, func(*wireMeta) {}), valid: true},
		{name: "TamperedClientAddr", node: "n1", meta: rewriteOf(t, withClient, false, func(w *wireMeta) { w.Client = "10.6.6.6:443" })},
		{name: "ClientAddrAdded", node: "n1", meta: rewrite(t, false, func(w *wireMeta) { w.Client = "10.6.6.6:443" })},
		{name: "ClientAddrDropped", node: "n1", meta: rewriteOf(t, withClient, false, func(w *wireMeta) { w.Client = "" })},
		{name: "LeavingFlagAdded", node: "n1", meta: rewrite(t, false, func(w *wireMeta) { w.Leaving = true })},
		{name: "FieldsShifted", node: "n1", meta: rewrite(t, false, func(w *wireMeta) {
			w.APIAddr, w.RaftAddr = w.APIAddr+w.RaftAddr, "" // same bytes, other split
		})},
		{name: "AnotherNodesMeta", node: "rogue", meta: rewrite(t, false, func(w *wireMeta) { w.NodeID = "rogue" })},
		{name: "MissingProof", node: "n1", meta: rewrite(t, false, func(w *wireMeta) { w.Proof = "" })},
		{name: "TruncatedProof", node: "n1", meta: rewrite(t, false, func(w *wireMeta) { w.Proof = w.Proof[:10] })},
		{name: "ProofNotBase64", node: "n1", meta: rewrite(t, false, func(w *wireMeta) { w.Proof = "!!!!!!!!!!!!!!!!!!!!!!" })},
		{name: "NotJSON", node: "n1", meta: []byte("garbage")},
		{name: "Empty", node: "n1", meta: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.valid, verifyMeta(key, tc.node, tc.meta))
		})
	}

	t.Run("FitsWithLongestNodeID", func(t *testing.T) {
		t.Parallel()
		long := Meta{
			NodeID:   strings.Repeat("n", maxNodeIDLen),
			APIAddr:  strings.Repeat("a", 120) + ".example.com:65535",
			RaftAddr: "[2001:db8:ffff:ffff:ffff:ffff:ffff:ffff]:65535",
			Version:  "v1.22.333-rc.4+g0123456789ab",
		}
		cfg := Config{NodeID: long.NodeID, Meta: long, ClusterKey: clusterkeytest.Key()}
		require.NoError(t, cfg.Validate())
		b, err := encodeMeta(long, true, cfg.signKey())
		require.NoError(t, err)
		require.LessOrEqual(t, len(b), MetaMaxSize)
		require.True(t, verifyMeta(cfg.signKey(), long.NodeID, b))
		got, leaving := decodeMeta(long.NodeID, b)
		require.Equal(t, long, got)
		require.True(t, leaving)
	})
}

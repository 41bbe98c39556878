package api

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/auth"
)

func TestNodeKeyRotation(t *testing.T) {
	oldKey, newKey, stranger := []byte(strings.Repeat("o", 32)), []byte(strings.Repeat("n", 32)), []byte(strings.Repeat("s", 32))
	id := auth.Identity{TokenID: "0123456789abcdef", Scope: auth.ScopeRead}
	served := func(t *testing.T, b *authBundle, key []byte) int {
		t.Helper()
		return b.doRequest(t, b.nodeRequest(t, key, time.Now(), id, "GET", "/workflows", "")).Status
	}
	b := setupAuth(t, func(c *Config, _ *auth.Table) {
		c.NodeKey, c.NodeVerifyKeys = newKey, [][]byte{oldKey}
	})
	t.Run("EveryKeyOfTheRingVerifies", func(t *testing.T) {
		require.Equal(t, http.StatusOK, served(t, b, newKey))
		require.Equal(t, http.StatusOK, served(t, b, oldKey), "a node still signing with the old key")
		require.Equal(t, http.StatusUnauthorized, served(t, b, stranger))
	})
	t.Run("ThePrimarySigns", func(t *testing.T) {
		req, err := http.NewRequest("GET", "http://n1"+BasePath+"/workflows", nil)
		require.NoError(t, err)
		b.server.signNode(req, NodeSig{Identity: id})
		only := &Server{cfg: Config{NodeKey: newKey}, now: time.Now}
		require.NoError(t, only.verifyNode(withURI(req)))
		old := &Server{cfg: Config{NodeKey: oldKey}, now: time.Now}
		require.Error(t, old.verifyNode(withURI(req)))
	})
	t.Run("SetNodeKeysRemovesTheOldKeyAtOnce", func(t *testing.T) {
		b.server.SetNodeKeys(newKey, nil)
		require.Equal(t, http.StatusUnauthorized, served(t, b, oldKey))
		require.Equal(t, http.StatusOK, served(t, b, newKey))
	})
}

// withURI sets what a server sees as the request URI.
func withURI(r *http.Request) *http.Request {
	r.RequestURI = r.URL.RequestURI()
	return r
}

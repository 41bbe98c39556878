package node

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/auth"
)

// authed sends a request to n's API with "Authorization: Bearer token"
// (none when token is empty) and decodes the JSON answer.
func authed(t *testing.T, n *Node, token, method, path string, body any) reply {
	t.Helper()
	if token == "" {
		return call(t, n, method, path, body)
	}
	return call(t, n, method, path, body, "Authorization", "Bearer "+token)
}

// writeToken writes a fresh admin token to a file and returns both.
func writeToken(t *testing.T) (string, string) {
	t.Helper()
	full, _ := auth.New(auth.Spec{Scope: auth.ScopeAdmin}, time.Now())
	path := filepath.Join(t.TempDir(), "initial-token")
	require.NoError(t, os.WriteFile(path, []byte(full+"\n"), 0o600))
	return full, path
}

func TestDevTokens(t *testing.T) {
	t.Run("FirstStartWritesABootstrapToken", func(t *testing.T) {
		b := setup(t)
		b.cfg.Auth = AuthConfig{Mode: AuthTokens}
		n := b.start(t, b.cfg)
		path := filepath.Join(b.cfg.DataDir, BootstrapTokenFile)
		info, err := os.Stat(path)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
		raw, err := os.ReadFile(path)
		require.NoError(t, err)
		token := strings.TrimSpace(string(raw))
		require.Equal(t, http.StatusUnauthorized, authed(t, n, "", "GET", "/workflows", nil).Status)
		require.Equal(t, http.StatusOK, authed(t, n, token, "GET", "/workflows", nil).Status)
		list := authed(t, n, token, "GET", "/admin/tokens", nil)
		require.Len(t, list.Body["tokens"], 1)
		require.NotContains(t, list.Body["tokens"].([]any)[0], "hash")
		require.NotContains(t, list.Body["tokens"].([]any)[0], "token")

		t.Run("ARestartKeepsIt", func(t *testing.T) {
			require.NoError(t, n.Stop(ctxT(t)))
			n2 := b.start(t, b.cfg)
			again, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, raw, again, "no second bootstrap token")
			require.Equal(t, http.StatusOK, authed(t, n2, token, "GET", "/workflows", nil).Status)
		})
	})
	t.Run("InitialTokenFile", func(t *testing.T) {
		b := setup(t)
		token, file := writeToken(t)
		b.cfg.Auth = AuthConfig{Mode: AuthTokens, InitialTokenFile: file}
		n := b.start(t, b.cfg)
		require.Equal(t, http.StatusOK, authed(t, n, token, "GET", "/admin/tokens", nil).Status)
		_, err := os.Stat(filepath.Join(b.cfg.DataDir, BootstrapTokenFile))
		require.ErrorIs(t, err, os.ErrNotExist, "no bootstrap token beside an initial one")
	})
	t.Run("CreateUseRevoke", func(t *testing.T) {
		b := setup(t)
		admin, file := writeToken(t)
		b.cfg.Auth = AuthConfig{Mode: AuthTokens, InitialTokenFile: file}
		n := b.start(t, b.cfg)
		created := authed(t, n, admin, "POST", "/admin/tokens", map[string]any{"scope": "read", "name": "dashboard", "expires_in": "1h"})
		require.Equal(t, http.StatusCreated, created.Status, "%v", created.Body)
		read := created.Body["token"].(string)
		require.Equal(t, http.StatusOK, authed(t, n, read, "GET", "/workflows", nil).Status)
		require.Equal(t, http.StatusForbidden, authed(t, n, read, "POST", "/workflows/noop_chain/start", map[string]any{}).Status)
		require.Equal(t, http.StatusForbidden, authed(t, n, read, "GET", "/admin/tokens", nil).Status)
		revoked := authed(t, n, admin, "DELETE", "/admin/tokens/"+created.Body["id"].(string), nil)
		require.Equal(t, http.StatusOK, revoked.Status)
		require.Equal(t, "revoked", revoked.Body["state"])
		require.Equal(t, http.StatusUnauthorized, authed(t, n, read, "GET", "/workflows", nil).Status)
		t.Run("RevokedStaysRevokedAfterARestart", func(t *testing.T) {
			require.NoError(t, n.Stop(ctxT(t)))
			n2 := b.start(t, b.cfg)
			require.Equal(t, http.StatusUnauthorized, authed(t, n2, read, "GET", "/workflows", nil).Status)
		})
	})
	t.Run("BadRequests", func(t *testing.T) {
		b := setup(t)
		admin, file := writeToken(t)
		b.cfg.Auth = AuthConfig{Mode: AuthTokens, InitialTokenFile: file}
		n := b.start(t, b.cfg)
		for name, body := range map[string]any{
			"NoScope":           map[string]any{},
			"UnknownScope":      map[string]any{"scope": "root"},
			"NoneScope":         map[string]any{"scope": "none"},
			"NegativeExpiry":    map[string]any{"scope": "read", "expires_in": "-1h"},
			"HugeExpiry":        map[string]any{"scope": "read", "expires_in": 1e300},
			"ExpiryNotDuration": map[string]any{"scope": "read", "expires_in": "soon"},
			"UnknownField":      map[string]any{"scope": "read", "secret": "mine"},
			"NameWithNUL":       map[string]any{"scope": "read", "name": "a\x00b"},
		} {
			r := authed(t, n, admin, "POST", "/admin/tokens", body)
			require.Equal(t, http.StatusBadRequest, r.Status, "%s: %v", name, r.Body)
			require.NotEmpty(t, r.Body["error"], name)
		}
		require.Equal(t, http.StatusNotFound, authed(t, n, admin, "DELETE", "/admin/tokens/0123456789abcdef", nil).Status)
	})
}

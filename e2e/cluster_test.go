package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/auth"
	"github.com/harvestd/harvest/internal/clusterkey"
)

func TestNewSecrets(t *testing.T) {
	dir := t.TempDir()
	s, err := NewSecrets(dir)
	require.NoError(t, err)
	for _, f := range []string{s.KeyFile, s.TokenFile} {
		info, err := os.Stat(f)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "%s mode", f)
	}
	_, err = clusterkey.Load(s.KeyFile)
	require.NoError(t, err, "harvestd accepts the cluster key")
	raw, err := os.ReadFile(s.TokenFile)
	require.NoError(t, err)
	require.Equal(t, s.Token+"\n", string(raw))
	_, err = auth.Parse(s.Token)
	require.NoError(t, err, "harvestd accepts the initial token")

	other, err := NewSecrets(t.TempDir())
	require.NoError(t, err)
	require.NotEqual(t, s.Token, other.Token, "a fresh token per run")
}

// Every node gets the cluster key and, with the raft catalog (tokens), the
// initial token; without it, --auth off.
func TestClusterArgsCarryTheSecrets(t *testing.T) {
	s := Secrets{KeyFile: "/run/k", TokenFile: "/run/t", Token: "x"}
	for _, raft := range []bool{true, false} {
		c := &Cluster{Net: &Net{Prefix: "10.77.0", N: 3}, Dir: "/tmp/d", Raft: raft, Secrets: s}
		for i := 1; i <= 3; i++ {
			a := c.args(i)
			requireFlag(t, a, "--cluster-key-file", s.KeyFile)
			if raft {
				requireFlag(t, a, "--initial-token-file", s.TokenFile)
				require.NotContains(t, a, "--auth", "tokens are the agent's default")
			} else {
				requireFlag(t, a, "--auth", "off")
			}
		}
	}
}

func requireFlag(t *testing.T, args []string, flag, value string) {
	t.Helper()
	i := slices.Index(args, flag)
	require.True(t, i >= 0 && i+1 < len(args), "no %s in %q", flag, args)
	require.Equal(t, value, args[i+1], "%s in %q", flag, args)
}

// The readiness, raft and admin calls send the admin token.
func TestClusterRequestsSendTheToken(t *testing.T) {
	const token = "hvt_0123456789abcdef_0123456789abcdef0123456789abcdef0123456789abcdef"
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Authorization"))
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	c := &Cluster{Secrets: Secrets{Token: token}}
	require.NoError(t, c.getJSON(context.Background(), srv.URL+"/api/harvest/cluster/members", nil))
	require.NoError(t, c.doJSON(context.Background(), http.MethodPost, srv.URL+"/api/harvest/admin/shards/1/drain", nil, nil))
	require.Equal(t, []string{"Bearer " + token, "Bearer " + token}, got)
}

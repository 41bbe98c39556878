package main

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// clusterSecrets are the files a test cluster's agents share: the cluster
// key and, with tokens, the initial admin token.
type clusterSecrets struct {
	keyFile   string
	tokenFile string
	token     string // "": the agents run with --auth off
}

// newClusterSecrets writes a fresh cluster key and, if withToken, an
// initial admin token into a directory of the test.
func newClusterSecrets(t *testing.T, withToken bool) clusterSecrets {
	t.Helper()
	dir := t.TempDir()
	s := clusterSecrets{keyFile: writeClusterKey(t, dir)}
	if withToken {
		s.token = "hvt_" + randomHex(t, 8) + "_" + randomHex(t, 32)
		s.tokenFile = filepath.Join(dir, "admin.token")
		require.NoError(t, os.WriteFile(s.tokenFile, []byte(s.token+"\n"), 0o600))
	}
	return s
}

// args are the agent flags of the secrets.
func (s clusterSecrets) args() []string {
	a := []string{"--cluster-key-file", s.keyFile}
	if s.token == "" {
		return append(a, "--auth", "off")
	}
	return append(a, "--initial-token-file", s.tokenFile)
}

// writeClusterKey writes base64 of 32 random bytes to dir/cluster.key.
func writeClusterKey(t *testing.T, dir string) string {
	t.Helper()
	raw := make([]byte, 32)
	_, err := rand.Read(raw)
	require.NoError(t, err)
	path := filepath.Join(dir, "cluster.key")
	require.NoError(t, os.WriteFile(path, []byte(base64.StdEncoding.EncodeToString(raw)+"\n"), 0o600))
	return path
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}

package certgen

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/internal/tlsconf"
)

func setup(t *testing.T, hosts ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "certs")
	require.NoError(t, Create(dir, hosts, time.Now()))
	return dir
}

func TestCreate(t *testing.T) {
	t.Run("TheNodeCertificateNamesEveryHostAndVerifies", func(t *testing.T) {
		dir := setup(t, "harvest1", "172.28.0.11", "::1")
		pool := x509.NewCertPool()
		ca, err := os.ReadFile(filepath.Join(dir, CAFile))
		require.NoError(t, err)
		require.True(t, pool.AppendCertsFromPEM(ca))
		pair, err := tls.LoadX509KeyPair(filepath.Join(dir, NodeFile), filepath.Join(dir, NodeKeyFile))
		require.NoError(t, err)
		leaf, err := x509.ParseCertificate(pair.Certificate[0])
		require.NoError(t, err)
		for _, host := range []string{"localhost", "127.0.0.1", "harvest1", "172.28.0.11", "::1"} {
			for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
				_, err := leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: pool, KeyUsages: []x509.ExtKeyUsage{usage}})
				require.NoError(t, err, "%s for %v", host, usage)
			}
		}
		_, err = leaf.Verify(x509.VerifyOptions{DNSName: "harvest2", Roots: pool})
		require.Error(t, err, "a host not given")
		require.WithinDuration(t, time.Now().Add(NodeValidity), leaf.NotAfter, time.Minute)
	})
	t.Run("HarvestdLoadsTheFiles", func(t *testing.T) {
		dir := setup(t)
		files := tlsconf.Files{CertFile: filepath.Join(dir, NodeFile), KeyFile: filepath.Join(dir, NodeKeyFile),
			CAFile: filepath.Join(dir, CAFile)}
		_, err := tlsconf.Load(files)
		require.NoError(t, err)
	})
	t.Run("EveryFileIsPrivate", func(t *testing.T) {
		dir := setup(t)
		info, err := os.Stat(dir)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o700), info.Mode().Perm())
		for _, f := range []string{CAFile, CAKeyFile, NodeFile, NodeKeyFile} {
			info, err := os.Stat(filepath.Join(dir, f))
			require.NoError(t, err)
			require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), f)
		}
	})
	t.Run("NeverOverwrites", func(t *testing.T) {
		dir := setup(t)
		before, err := os.ReadFile(filepath.Join(dir, CAFile))
		require.NoError(t, err)
		require.ErrorIs(t, Create(dir, nil, time.Now()), ErrExists)
		after, err := os.ReadFile(filepath.Join(dir, CAFile))
		require.NoError(t, err)
		require.Equal(t, before, after)
	})
	t.Run("AnEmptyHostIsRefused", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "certs")
		require.ErrorIs(t, Create(dir, []string{""}, time.Now()), ErrHost)
		_, err := os.Stat(filepath.Join(dir, CAFile))
		require.ErrorIs(t, err, os.ErrNotExist, "nothing written")
	})
}

package main

import (
	"crypto/tls"
	"crypto/x509"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/internal/tlsconf"
	"github.com/harvestd/harvest/internal/tlsconf/tlstest"
)

// TestSIGHUPReloadsTLS: harvestd re-reads its certificate and key on
// SIGHUP: the API serves the replaced certificate from the next
// connection on, without a restart; a broken file is logged and the node
// keeps serving the certificate it has.
func TestSIGHUPReloadsTLS(t *testing.T) {
	ca := tlstest.NewCA(t, "hup")
	dir := t.TempDir()
	files := tlsconf.Files{CertFile: filepath.Join(dir, "node.pem"), KeyFile: filepath.Join(dir, "node-key.pem"), CAFile: ca.File}
	first := installCert(t, ca.Node(t, "first", time.Now().Add(time.Hour)), files)
	addr := freeAddr(t)
	d := launch(t, addr, "dev", "--data-dir", testDir(t), "--http-addr", addr,
		"--tls-cert", files.CertFile, "--tls-key", files.KeyFile, "--tls-ca", files.CAFile)
	roots := x509.NewCertPool()
	pem, err := os.ReadFile(ca.File)
	require.NoError(t, err)
	require.True(t, roots.AppendCertsFromPEM(pem))
	served := func() *big.Int {
		c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12})
		if err != nil {
			return nil
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].SerialNumber
	}
	waitServed := func(want *big.Int, what string) {
		t.Helper()
		deadline := time.Now().Add(readyTimeout)
		for got := served(); got == nil || got.Cmp(want) != 0; got = served() {
			select {
			case <-d.exited:
				t.Fatalf("harvestd exited: %v", d.waitErr)
			case <-time.After(pollInterval):
			}
			require.True(t, time.Now().Before(deadline), "%s: serving %v, want %v", what, got, want)
		}
	}
	waitServed(first, "at start")

	t.Run("ANewCertificateIsServedAfterSIGHUP", func(t *testing.T) {
		second := installCert(t, ca.Node(t, "second", time.Now().Add(2*time.Hour)), files)
		require.Equal(t, first, served(), "nothing changes before the signal")
		require.NoError(t, d.cmd.Process.Signal(syscall.SIGHUP))
		waitServed(second, "after SIGHUP")
		first = second
		// The log line follows the swap: poll for it.
		deadline := time.Now().Add(readyTimeout)
		for !strings.Contains(d.out.String(), "TLS certificate reloaded") {
			require.True(t, time.Now().Before(deadline), "no log line of the reload:\n%s", d.out.String())
			time.Sleep(pollInterval)
		}
	})
	t.Run("ABrokenFileKeepsTheCertificate", func(t *testing.T) {
		require.NoError(t, os.WriteFile(files.CertFile, []byte("not a certificate"), 0o600))
		require.NoError(t, d.cmd.Process.Signal(syscall.SIGHUP))
		deadline := time.Now().Add(readyTimeout)
		for !strings.Contains(d.out.String(), "TLS files not reloaded") {
			require.True(t, time.Now().Before(deadline), "no log line of the refused reload:\n%s", d.out.String())
			time.Sleep(pollInterval)
		}
		require.Equal(t, first, served(), "the certificate in use")
	})
}

// installCert moves the certificate and key of src to the paths of dst
// (a rename each, as a deploy tool would) and returns its serial number.
func installCert(t *testing.T, src, dst tlsconf.Files) *big.Int {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(src.CertFile, src.KeyFile)
	require.NoError(t, err)
	require.NoError(t, os.Rename(src.KeyFile, dst.KeyFile))
	require.NoError(t, os.Rename(src.CertFile, dst.CertFile))
	return pair.Leaf.SerialNumber
}

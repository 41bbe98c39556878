package tlsconf_test

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/internal/tlsconf"
	"github.com/harvestd/harvest/internal/tlsconf/tlstest"
)

func TestLoad(t *testing.T) {
	ca := tlstest.NewCA(t, "c")
	files := ca.Node(t, "n", time.Now().Add(time.Hour))
	t.Run("ServerAsksForClientCertificatesWithACA", func(t *testing.T) {
		m, err := tlsconf.Load(files)
		require.NoError(t, err)
		s := m.Server(tls.RequireAndVerifyClientCert)
		require.Equal(t, tls.RequireAndVerifyClientCert, s.ClientAuth)
		require.NotNil(t, s.ClientCAs)
		require.NotNil(t, m.Client().VerifyConnection, "the peer is verified against the CA in use")
		cert, err := m.Client().GetClientCertificate(nil)
		require.NoError(t, err)
		require.Equal(t, m.Leaf().Raw, cert.Certificate[0], "a node presents its certificate")
	})
	t.Run("WithoutACANoClientCertificate", func(t *testing.T) {
		f := files
		f.CAFile = ""
		m, err := tlsconf.Load(f)
		require.NoError(t, err)
		require.Equal(t, tls.NoClientCert, m.Server(tls.RequireAndVerifyClientCert).ClientAuth)
		require.Nil(t, m.Client().RootCAs, "the system roots")
		require.False(t, m.Client().InsecureSkipVerify, "the standard verification")
	})
	t.Run("Errors", func(t *testing.T) {
		notPEM := filepath.Join(t.TempDir(), "ca.pem")
		require.NoError(t, os.WriteFile(notPEM, []byte("not a certificate"), 0o600))
		for name, f := range map[string]tlsconf.Files{
			"NoKey":       {CertFile: files.CertFile},
			"WrongKey":    {CertFile: files.CertFile, KeyFile: ca.Node(t, "other", time.Now().Add(time.Hour)).KeyFile},
			"MissingCA":   {CertFile: files.CertFile, KeyFile: files.KeyFile, CAFile: filepath.Join(t.TempDir(), "none")},
			"CAIsNotPEM":  {CertFile: files.CertFile, KeyFile: files.KeyFile, CAFile: notPEM},
			"MissingCert": {CertFile: filepath.Join(t.TempDir(), "none"), KeyFile: files.KeyFile},
		} {
			t.Run(name, func(t *testing.T) {
				_, err := tlsconf.Load(f)
				require.Error(t, err)
			})
		}
	})
}

// TestReload: a certificate and CA replaced in their files are served,
// presented and trusted from the next handshake on; a broken file leaves
// the material in use.
func TestReload(t *testing.T) {
	first, second := tlstest.NewCA(t, "first"), tlstest.NewCA(t, "second")
	files := first.Node(t, "n", time.Now().Add(time.Hour))
	m, err := tlsconf.Load(files)
	require.NoError(t, err)
	addr := handshakes(t, m.Server(tls.RequireAndVerifyClientCert))
	dial := func(c *tls.Config) (*tls.ConnectionState, error) {
		conn, err := tls.Dial("tcp", addr, c)
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		cs := conn.ConnectionState()
		return &cs, nil
	}
	cs, err := dial(m.Client())
	require.NoError(t, err)
	before := cs.PeerCertificates[0].SerialNumber
	old, err := tlsconf.Load(files) // a peer still on the first CA
	require.NoError(t, err)

	t.Run("ABrokenFileKeepsTheMaterial", func(t *testing.T) {
		require.NoError(t, os.WriteFile(files.CAFile, []byte("garbage"), 0o600))
		require.ErrorIs(t, m.Reload(), tlsconf.ErrNoCertificates)
		cs, err := dial(m.Client())
		require.NoError(t, err)
		require.Equal(t, before, cs.PeerCertificates[0].SerialNumber)
	})
	t.Run("TheNewCertificateAndCAServeTheNextHandshake", func(t *testing.T) {
		replace(t, second.Node(t, "n", time.Now().Add(time.Hour)), files)
		require.NoError(t, m.Reload())
		cs, err := dial(m.Client())
		require.NoError(t, err, "both ends on the new material")
		require.NotEqual(t, before, cs.PeerCertificates[0].SerialNumber, "the new certificate is served")
		require.Equal(t, "second", cs.PeerCertificates[0].Issuer.CommonName)
		_, err = dial(old.Client())
		require.Error(t, err, "a peer of the old CA no longer verifies nor is verified")
	})
}

// handshakes serves TLS handshakes with cfg on a loopback port until the
// test ends, and returns its address.
func handshakes(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _ = conn.(*tls.Conn).Handshake(); _ = conn.Close() }()
		}
	}()
	return ln.Addr().String()
}

// replace copies the files of from over to's.
func replace(t *testing.T, from, to tlsconf.Files) {
	t.Helper()
	for src, dst := range map[string]string{from.CertFile: to.CertFile, from.KeyFile: to.KeyFile, from.CAFile: to.CAFile} {
		b, err := os.ReadFile(src)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(dst, b, 0o600))
	}
}

// TestClientVerifiesTheServer: the client's own verification (against the
// CA of the moment) refuses what the standard one does: another name, an
// expired certificate, another CA.
func TestClientVerifiesTheServer(t *testing.T) {
	ca := tlstest.NewCA(t, "c")
	client, err := tlsconf.Load(ca.Node(t, "client", time.Now().Add(time.Hour)))
	require.NoError(t, err)
	serve := func(f tlsconf.Files) string {
		m, err := tlsconf.Load(f)
		require.NoError(t, err)
		return handshakes(t, m.Server(tls.VerifyClientCertIfGiven))
	}
	dial := func(addr, name string) error {
		c := client.Client()
		c.ServerName = name
		conn, err := tls.Dial("tcp", addr, c)
		if err == nil {
			conn.Close()
		}
		return err
	}
	good := serve(ca.Node(t, "good", time.Now().Add(time.Hour)))
	require.NoError(t, dial(good, "127.0.0.1"))
	require.NoError(t, dial(good, "localhost"))
	require.Error(t, dial(good, "elsewhere.example"), "another name")
	require.Error(t, dial(serve(ca.Node(t, "old", time.Now().Add(-time.Minute))), "127.0.0.1"), "expired")
	require.Error(t, dial(serve(tlstest.NewCA(t, "other").Node(t, "rogue", time.Now().Add(time.Hour))), "127.0.0.1"), "another CA")
}

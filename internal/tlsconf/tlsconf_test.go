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
		require.NotNil(t, m.Client().RootCAs)
		require.Len(t, m.Client().Certificates, 1, "a node presents its certificate")
	})
	t.Run("WithoutACANoClientCertificate", func(t *testing.T) {
		f := files
		f.CAFile = ""
		m, err := tlsconf.Load(f)
		require.NoError(t, err)
		require.Equal(t, tls.NoClientCert, m.Server(tls.RequireAndVerifyClientCert).ClientAuth)
		require.Nil(t, m.Client().RootCAs, "the system roots")
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

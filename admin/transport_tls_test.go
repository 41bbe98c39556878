package admin

import (
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/internal/clusterkey"
	"github.com/harvestd/harvest/internal/clusterkey/clusterkeytest"
	"github.com/harvestd/harvest/internal/tlsconf"
	"github.com/harvestd/harvest/internal/tlsconf/tlstest"
)

// TestTransportTLS: with TLS the raft transport runs over mutual TLS,
// and a dialer with a certificate of another CA, an expired certificate
// or no TLS at all is refused.
func TestTransportTLS(t *testing.T) {
	t.Parallel()
	ca := tlstest.NewCA(t, "cluster")
	material := func(f tlsconf.Files) *tlsconf.Material {
		m, err := tlsconf.Load(f)
		require.NoError(t, err)
		return m
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	key := clusterkeytest.Key().Derive(clusterkey.LabelRaft)
	acceptor := &authLayer{ln: ln, ring: newRaftKeys(key), tls: material(ca.Node(t, "n1", time.Now().Add(time.Hour))),
		timeout: time.Second, log: zerolog.Nop()}
	t.Cleanup(func() { _ = acceptor.Close() })
	accepted := make(chan error, 16)
	go func() {
		for {
			conn, err := acceptor.Accept()
			if err != nil {
				return
			}
			go func() {
				_, err := conn.Write([]byte{1}) // runs the TLS and key handshakes
				accepted <- err
				_ = conn.Close()
			}()
		}
	}()
	dial := func(m *tlsconf.Material) error {
		d := &authLayer{ring: newRaftKeys(key), tls: m, timeout: time.Second, log: zerolog.Nop()}
		conn, err := d.Dial(raft.ServerAddress(ln.Addr().String()), time.Second)
		if err == nil {
			_ = conn.Close()
		}
		return err
	}
	other := tlstest.NewCA(t, "other")
	t.Run("SameCA", func(t *testing.T) {
		require.NoError(t, dial(material(ca.Node(t, "n2", time.Now().Add(time.Hour)))))
		require.NoError(t, <-accepted)
	})
	for name, m := range map[string]*tlsconf.Material{
		"OtherCA":            material(other.Node(t, "rogue", time.Now().Add(time.Hour))),
		"ExpiredCertificate": material(ca.Node(t, "old", time.Now().Add(-time.Minute))),
		"NoTLS":              nil,
	} {
		t.Run(name, func(t *testing.T) {
			require.Error(t, dial(m))
			require.Error(t, <-accepted, "the acceptor refuses it too")
		})
	}
}

package node

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/api"
	"github.com/harvestd/harvest/auth"
	"github.com/harvestd/harvest/internal/clusterkey"
	"github.com/harvestd/harvest/internal/clusterkey/clusterkeytest"
	"github.com/harvestd/harvest/internal/tlsconf"
	"github.com/harvestd/harvest/internal/tlsconf/tlstest"
	"github.com/harvestd/harvest/membership"
)

// peer is a would-be node: its certificate (nil: none) and its cluster
// key.
type peer struct {
	cert *tls.Certificate
	key  clusterkey.Key
}

func newPeer(t *testing.T, f tlsconf.Files, key clusterkey.Key) peer {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
	require.NoError(t, err)
	return peer{cert: &cert, key: key}
}

// clientTLS trusts the cluster's CA and presents p's certificate, even
// one the server's list of CAs does not name (Go's client would
// otherwise send none; other clients send what they have).
func (p peer) clientTLS(t *testing.T, caFile string) *tls.Config {
	t.Helper()
	return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: caPool(t, caFile), ServerName: "127.0.0.1",
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			if p.cert == nil {
				return &tls.Certificate{}, nil
			}
			return p.cert, nil
		}}
}

func caPool(t *testing.T, caFile string) *x509.CertPool {
	t.Helper()
	pem, err := os.ReadFile(caFile)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(pem))
	return pool
}

// nodeRequest sends, as p, a node request (signed with p's key) to n's
// API: its status, or the connection's error.
func (p peer) nodeRequest(t *testing.T, n *Node, caFile string) (int, error) {
	t.Helper()
	tr := &http.Transport{TLSClientConfig: p.clientTLS(t, caFile)}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctxT(t), "GET", "https://"+n.Addr()+api.BasePath+"/internal/catalog/index", nil)
	require.NoError(t, err)
	api.SignNode(req, api.NodeSig{Key: p.key.Derive(clusterkey.LabelHTTP), From: "n9", To: n.NodeID(), Identity: auth.Anonymous, Time: time.Now()})
	res, err := (&http.Client{Transport: tr, Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return 0, err
	}
	res.Body.Close()
	return res.StatusCode, nil
}

// raftDial dials n's raft transport as p and runs the dialer's side of
// the key handshake (admin/transport.go): the certificate the acceptor
// served, or the first refusal.
func (p peer) raftDial(t *testing.T, n *Node, caFile string) (*x509.Certificate, error) {
	t.Helper()
	conn, err := tls.Dial("tcp", n.admin.Addr(), p.clientTLS(t, caFile))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	nonceA, nonceD := make([]byte, 32), make([]byte, 32)
	if _, err := io.ReadFull(conn, nonceA); err != nil { // a refused certificate ends here under TLS 1.3
		return nil, fmt.Errorf("read challenge: %w", err)
	}
	key := p.key.Derive(clusterkey.LabelRaft)
	if _, err := conn.Write(append(raftAnswer(key, "raft-dial", nonceA, nonceD), nonceD...)); err != nil {
		return nil, err
	}
	got := make([]byte, sha256.Size)
	if _, err := io.ReadFull(conn, got); err != nil {
		return nil, fmt.Errorf("read answer: %w", err)
	}
	if !hmac.Equal(got, raftAnswer(key, "raft-accept", nonceA, nonceD)) {
		return nil, errors.New("wrong answer")
	}
	return conn.ConnectionState().PeerCertificates[0], nil
}

func raftAnswer(key []byte, label string, nonceA, nonceD []byte) []byte {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(label))
	mac.Write(nonceA)
	mac.Write(nonceD)
	return mac.Sum(nil)
}

// serveAs is an HTTPS server with p's certificate that asks for a client
// certificate of the CA and records the serial of the one it got.
func (p peer) serveAs(t *testing.T, caFile string) (url string, seen *atomic.Pointer[big.Int]) {
	t.Helper()
	seen = &atomic.Pointer[big.Int]{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.PeerCertificates) > 0 {
			seen.Store(r.TLS.PeerCertificates[0].SerialNumber)
		}
	}))
	srv.TLS = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{*p.cert},
		ClientCAs: caPool(t, caFile), ClientAuth: tls.RequireAndVerifyClientCert}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.URL, seen
}

// fetch sends a GET through client: its error.
func fetch(client *http.Client, url string) error {
	res, err := client.Get(url)
	if err == nil {
		res.Body.Close()
	}
	return err
}

// testRefusedAtEachHop: a peer with a certificate of another CA, an
// expired certificate of the cluster's CA, or a valid certificate and
// another cluster key, is refused on every hop it could use: the API
// (TLS), node requests (TLS, then the signature), raft (TLS, then the key
// handshake), a node forwarding to it (the node verifies the server), and
// gossip (the keyring and member proof; gossip carries no certificate, so
// only the key applies). A peer with a valid certificate and the key gets
// through every hop, so each refusal is the one under test.
func testRefusedAtEachHop(t *testing.T, c *cluster, ca *tlstest.CA) {
	valid := func(name string) tlsconf.Files { return ca.Node(t, name, time.Now().Add(time.Hour)) }
	good := newPeer(t, valid("good"), clusterkeytest.Key())
	rogues := []struct {
		name    string
		p       peer
		badCert bool // refused by TLS; else by the cluster key or for want of a certificate
	}{
		{"NoCertificate", peer{key: clusterkeytest.Key()}, false},
		{"OtherCA", newPeer(t, tlstest.NewCA(t, "other").Node(t, "rogue", time.Now().Add(time.Hour)), clusterkeytest.Key()), true},
		{"ExpiredCertificate", newPeer(t, ca.Node(t, "expired", time.Now().Add(-time.Minute)), clusterkeytest.Key()), true},
		{"WrongClusterKey", newPeer(t, valid("keyless"), clusterkeytest.Other()), false},
	}
	n := c.nodes[1]
	t.Run("AValidPeerGetsThrough", func(t *testing.T) {
		status, err := good.nodeRequest(t, n, ca.File)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, status)
		_, err = good.raftDial(t, n, ca.File)
		require.NoError(t, err)
		url, seen := good.serveAs(t, ca.File)
		require.NoError(t, fetch(n.nodeClient(), url))
		require.NotNil(t, seen.Load(), "the node presented its certificate")
		testTrustedMember(t, c, n, good, ca.File)
	})
	for _, r := range rogues {
		t.Run(r.name, func(t *testing.T) {
			t.Run("API", func(t *testing.T) {
				tr := &http.Transport{TLSClientConfig: r.p.clientTLS(t, ca.File)}
				defer tr.CloseIdleConnections()
				err := fetch(&http.Client{Transport: tr}, "https://"+n.Addr()+api.BasePath+"/workflows")
				if r.badCert {
					require.Error(t, err, "the API refuses the certificate it is given")
					return
				}
				require.NoError(t, err, "a valid certificate is a client like any other: its token decides")
			})
			t.Run("NodeRequests", func(t *testing.T) {
				status, err := r.p.nodeRequest(t, n, ca.File)
				if r.badCert {
					require.Error(t, err, "refused by TLS although signed with the cluster key")
					return
				}
				require.NoError(t, err)
				require.Equal(t, http.StatusUnauthorized, status, "refused: no certificate of the CA, or a signature under another key")
			})
			t.Run("Raft", func(t *testing.T) {
				_, err := r.p.raftDial(t, n, ca.File)
				require.Error(t, err)
			})
			// A server with a valid certificate (or none: no TLS server) is
			// reached only as a member, which the Gossip case decides.
			if r.badCert {
				t.Run("ForwardingToIt", func(t *testing.T) {
					url, seen := r.p.serveAs(t, ca.File)
					require.Error(t, fetch(n.nodeClient(), url), "the node refuses the server's certificate")
					require.Nil(t, seen.Load(), "no request reached it")
				})
			}
			t.Run("Gossip", func(t *testing.T) {
				if !bytes.Equal(r.p.key.Derive(clusterkey.LabelHTTP), clusterkeytest.Key().Derive(clusterkey.LabelHTTP)) {
					rogue := startRogue(t, membership.Config{NodeID: "rogue-" + r.name, Join: []string{n.GossipAddr()}, ClusterKey: r.p.key})
					require.Never(t, func() bool {
						return slices.Contains(memberIDs(n.gossip.Alive()), rogue.Local().NodeID)
					}, 3*time.Second, 50*time.Millisecond, "the keyring and member proof refuse another key")
					return
				}
				testUntrustedMember(t, c, n, r.p, ca.File)
			})
		})
	}
}

// apiAddr is where p serves an API: over TLS with its certificate, or
// in clear text without one.
func (p peer) apiAddr(t *testing.T, caFile string) string {
	t.Helper()
	if p.cert == nil {
		return countingServer(t).addr
	}
	url, _ := p.serveAs(t, caFile)
	return strings.TrimPrefix(url, "https://")
}

// testUntrustedMember: p, with the cluster key, joins gossip (the key is
// all gossip checks) under an id that would own shard 0, but n's check of
// its certificate fails: to n it stays untrusted, owns no shard, raft never
// adds it and nothing is forwarded to it.
func testUntrustedMember(t *testing.T, c *cluster, n *Node, p peer, caFile string) {
	raftL := countingListener(t)
	id := idOwning(t, 0, "n0", "n1", "n2")
	startRogue(t, membership.Config{NodeID: id, Join: []string{n.GossipAddr()}, ClusterKey: p.key,
		Meta: membership.Meta{APIAddr: p.apiAddr(t, caFile), RaftAddr: raftL.addr, Version: Version}})
	eventually(t, "gossip to have the member alive", 20*time.Second, func() bool {
		return slices.Contains(memberIDs(n.gossip.Alive()), id)
	})
	require.Never(t, func() bool {
		return slices.Contains(memberIDs(n.view.Alive()), id) || slices.Contains(serverIDs(t, n.admin), id)
	}, 3*time.Second, 50*time.Millisecond, "counted alive, or added to raft")
	require.Equal(t, membership.StateUntrusted, memberState(n.view.Members(), id))
	target, err := n.router.ForShard(0)
	require.NoError(t, err)
	require.NotEqual(t, id, target.Owner, "owner of shard 0")
	require.Zero(t, raftL.accepted.Load(), "raft dialled it")
}

// testTrustedMember: p, with the cluster key and a certificate of the CA,
// joins gossip (without a raft address, under an id owning no shard, so
// the cluster is unchanged) and n counts it alive once its certificate
// verified; when it leaves it is gone.
func testTrustedMember(t *testing.T, c *cluster, n *Node, p peer, caFile string) {
	id := idOwningNone(t, c.cat.Readable, "n0", "n1", "n2")
	m := startRogue(t, membership.Config{NodeID: id, Join: []string{n.GossipAddr()}, ClusterKey: p.key,
		Meta: membership.Meta{APIAddr: p.apiAddr(t, caFile), Version: Version}})
	eventually(t, "the node to trust the member", 20*time.Second, func() bool {
		return slices.Contains(memberIDs(n.view.Alive()), id)
	})
	m.Stop()
	eventually(t, "the member to be gone", 20*time.Second, func() bool {
		return !slices.Contains(memberIDs(n.view.Alive()), id)
	})
}

// memberState is id's state in ms (0: not listed).
func memberState(ms []membership.Member, id string) membership.State {
	for _, m := range ms {
		if m.NodeID == id {
			return m.State
		}
	}
	return 0
}

// testCertificateReload: n1's certificate files are replaced by a new
// certificate and reloaded (SIGHUP in harvestd): its API and raft serve
// the new one and its forwarding presents it, while every node keeps
// serving; a broken file keeps the certificate in use.
func testCertificateReload(t *testing.T, c *cluster, ca *tlstest.CA, files *tlsconf.Files) {
	n := c.byID("n1")
	fresh := ca.Node(t, "n1-renewed", time.Now().Add(2*time.Hour))
	want := newPeer(t, fresh, clusterkeytest.Key()).cert.Leaf.SerialNumber
	good := newPeer(t, ca.Node(t, "good", time.Now().Add(time.Hour)), clusterkeytest.Key())
	served := func() *big.Int {
		conn, err := tls.Dial("tcp", n.Addr(), good.clientTLS(t, ca.File))
		require.NoError(t, err)
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber
	}
	before := served()
	require.NotEqual(t, want, before)
	copyFiles(t, fresh, *files)
	require.NoError(t, n.ReloadTLS())

	require.Equal(t, want, served(), "the API serves the new certificate")
	raftCert, err := good.raftDial(t, n, ca.File)
	require.NoError(t, err)
	require.Equal(t, want, raftCert.SerialNumber, "raft serves it")
	url, seen := good.serveAs(t, ca.File)
	require.NoError(t, fetch(n.nodeClient(), url))
	require.Equal(t, want, seen.Load(), "forwarding presents it")

	https := httpsClient(t, ca.File)
	for i := range 6 {
		status := postTLS(t, https, c.nodes[i%3], "/workflows/noop_chain/start", fmt.Sprintf(`{"workflow_id":"tls-reload-%d","input":{"activities":0}}`, i))
		require.Equal(t, http.StatusCreated, status, "every node serves after the reload")
	}
	require.Equal(t, http.StatusAccepted, postTLS(t, https, n, "/admin/shards/0/drain", `{"force":true}`), "raft commits through the reloaded node")

	t.Run("ABrokenFileKeepsTheCertificate", func(t *testing.T) {
		require.NoError(t, os.WriteFile(files.CertFile, []byte("garbage"), 0o600))
		require.Error(t, n.ReloadTLS())
		require.Equal(t, want, served())
	})
}

// postTLS posts body to n's API over HTTPS: the status.
func postTLS(t *testing.T, hc *http.Client, n *Node, path, body string) int {
	t.Helper()
	res, err := hc.Post("https://"+n.Addr()+api.BasePath+path, "application/json", strings.NewReader(body))
	require.NoError(t, err)
	res.Body.Close()
	return res.StatusCode
}

// copyFiles copies the files of from over to's.
func copyFiles(t *testing.T, from, to tlsconf.Files) {
	t.Helper()
	for src, dst := range map[string]string{from.CertFile: to.CertFile, from.KeyFile: to.KeyFile} {
		b, err := os.ReadFile(src)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(dst, b, 0o600))
	}
}

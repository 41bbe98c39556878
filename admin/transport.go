package admin

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/rs/zerolog"

	"github.com/harvestd/harvest/internal/tlsconf"
)

// Handshake of the raft transport.
const (
	// handshakeTimeout bounds a connection's handshake, both sides.
	handshakeTimeout = 5 * time.Second
	// nonceSize is the size of each side's random challenge.
	nonceSize = 32
	// dialLabel and acceptLabel keep the two answers apart, so that one
	// side's answer is never a valid answer for the other.
	dialLabel   = "raft-dial"
	acceptLabel = "raft-accept"
)

// authLayer is raft's TCP stream layer with mutual authentication: every
// connection starts with a challenge-response handshake under the raft
// key (ClusterKey.Derive(clusterkey.LabelRaft)), so only holders of the
// cluster key can send raft RPCs to this node or receive its (the catalog
// holds shard DSNs):
//
//	acceptor → dialer: nonceA (32 random bytes)
//	dialer → acceptor: HMAC(key, "raft-dial" | nonceA | nonceD), nonceD
//	acceptor → dialer: HMAC(key, "raft-accept" | nonceA | nonceD)
//
// A side that gets a wrong answer closes the connection. The handshake
// authenticates the peer, it does not encrypt: the raft traffic that
// follows is plain TCP.
//
// During a cluster key rotation the layer holds several raft keys (ring):
// a dialer answers with the first, an acceptor accepts an answer under
// any of them and answers under the one that matched.
type authLayer struct {
	ln        net.Listener
	advertise net.Addr
	ring      *raftKeys
	// tls, when set, runs every connection over mutual TLS before the
	// handshake: the dialer verifies the acceptor's certificate against
	// the CA, the acceptor requires the dialer's.
	tls     *tlsconf.Material
	timeout time.Duration
	log     zerolog.Logger
}

// raftKeys are the raft keys of a rotation, the first the one a dialer
// uses; Admin.Rotate replaces them while raft runs.
type raftKeys struct{ p atomic.Pointer[[][]byte] }

func newRaftKeys(keys ...[]byte) *raftKeys {
	r := &raftKeys{}
	r.set(keys)
	return r
}

func (r *raftKeys) set(keys [][]byte) { r.p.Store(&keys) }

func (r *raftKeys) get() [][]byte { return *r.p.Load() }

var _ raft.StreamLayer = (*authLayer)(nil)

// Dial connects to a raft peer and authenticates both ends.
func (l *authLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	conn, err := net.DialTimeout("tcp", string(address), timeout)
	if err != nil {
		return nil, err
	}
	if l.tls != nil {
		conn = tls.Client(conn, l.clientTLS(string(address)))
	}
	if err := l.handshake(conn, dialHandshake); err != nil {
		l.log.Warn().Err(err).Str("raft_addr", string(address)).Msg("raft handshake failed")
		return nil, err
	}
	return conn, nil
}

// Accept returns the next connection. Its handshake runs on its first
// Read or Write, in raft's goroutine for that connection (as tls.Server
// does), so that a silent client cannot hold up the accept loop.
func (l *authLayer) Accept() (net.Conn, error) {
	conn, err := l.ln.Accept()
	if err != nil {
		return nil, err
	}
	if l.tls != nil {
		conn = tls.Server(conn, l.tls.Server(tls.RequireAndVerifyClientCert))
	}
	return &acceptedConn{Conn: conn, l: l}, nil
}

// clientTLS verifies the peer at address (its host is the name its
// certificate must carry).
func (l *authLayer) clientTLS(address string) *tls.Config {
	c := l.tls.Client()
	if host, _, err := net.SplitHostPort(address); err == nil {
		c.ServerName = host
	}
	return c
}

func (l *authLayer) Close() error { return l.ln.Close() }

// Addr is the advertised address, else the bound one.
func (l *authLayer) Addr() net.Addr {
	if l.advertise != nil {
		return l.advertise
	}
	return l.ln.Addr()
}

// handshake runs one side of the handshake under the deadline and closes
// conn when it fails.
func (l *authLayer) handshake(conn net.Conn, side func(rw io.ReadWriter, keys [][]byte) error) error {
	err := conn.SetDeadline(time.Now().Add(l.timeout))
	if err == nil {
		err = side(conn, l.ring.get())
	}
	if err == nil {
		err = conn.SetDeadline(time.Time{})
	}
	if err != nil {
		_ = conn.Close()
		return fmt.Errorf("%w: %w", ErrHandshake, err)
	}
	return nil
}

// acceptedConn is an accepted connection that authenticates its peer on
// first use; until then, and after a failed handshake, it reads and
// writes nothing.
type acceptedConn struct {
	net.Conn
	l    *authLayer
	once sync.Once
	err  error
}

func (c *acceptedConn) Read(p []byte) (int, error) {
	if err := c.accept(); err != nil {
		return 0, err
	}
	return c.Conn.Read(p)
}

func (c *acceptedConn) Write(p []byte) (int, error) {
	if err := c.accept(); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}

func (c *acceptedConn) accept() error {
	c.once.Do(func() {
		c.err = c.l.handshake(c.Conn, acceptHandshake)
		if c.err != nil {
			c.l.log.Warn().Err(c.err).Str("remote_addr", c.RemoteAddr().String()).Msg("raft connection refused")
		}
	})
	return c.err
}

// acceptHandshake is the acceptor's side: challenge, check, answer.
func acceptHandshake(rw io.ReadWriter, keys [][]byte) error {
	nonceA, err := nonce()
	if err != nil {
		return err
	}
	if _, err := rw.Write(nonceA); err != nil {
		return fmt.Errorf("send challenge: %w", err)
	}
	msg := make([]byte, sha256.Size+nonceSize)
	if _, err := io.ReadFull(rw, msg); err != nil {
		return fmt.Errorf("read answer: %w", err)
	}
	nonceD := msg[sha256.Size:]
	key := matchingKey(keys, msg[:sha256.Size], nonceA, nonceD)
	if key == nil {
		return errWrongAnswer
	}
	if _, err := rw.Write(answer(key, acceptLabel, nonceA, nonceD)); err != nil {
		return fmt.Errorf("send answer: %w", err)
	}
	return nil
}

// dialHandshake is the dialer's side: answer and challenge, check.
func dialHandshake(rw io.ReadWriter, keys [][]byte) error {
	if len(keys) == 0 {
		return errWrongAnswer
	}
	key := keys[0]
	nonceA := make([]byte, nonceSize)
	if _, err := io.ReadFull(rw, nonceA); err != nil {
		return fmt.Errorf("read challenge: %w", err)
	}
	nonceD, err := nonce()
	if err != nil {
		return err
	}
	if _, err := rw.Write(append(answer(key, dialLabel, nonceA, nonceD), nonceD...)); err != nil {
		return fmt.Errorf("send answer: %w", err)
	}
	got := make([]byte, sha256.Size)
	if _, err := io.ReadFull(rw, got); err != nil {
		return fmt.Errorf("read answer (the peer may hold another key): %w", err)
	}
	if !hmac.Equal(got, answer(key, acceptLabel, nonceA, nonceD)) {
		return errWrongAnswer
	}
	return nil
}

// matchingKey is the key of keys the dialer's answer got is made with,
// nil when none (each compared in constant time).
func matchingKey(keys [][]byte, got, nonceA, nonceD []byte) []byte {
	var match []byte
	for _, k := range keys {
		if hmac.Equal(got, answer(k, dialLabel, nonceA, nonceD)) && match == nil {
			match = k
		}
	}
	return match
}

// answer is HMAC-SHA256(key, label | nonceA | nonceD).
func answer(key []byte, label string, nonceA, nonceD []byte) []byte {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(label))
	mac.Write(nonceA)
	mac.Write(nonceD)
	return mac.Sum(nil)
}

func nonce() ([]byte, error) {
	b := make([]byte, nonceSize)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("handshake nonce: %w", err)
	}
	return b, nil
}

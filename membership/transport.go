package membership

import (
	"context"
	"fmt"
	"log"
	"net"
	"time"

	"github.com/hashicorp/memberlist"
)

// bindAttempts is how often a free-port bind is retried: binding TCP and
// UDP to the same kernel-chosen port is racy (memberlist retries the same
// way).
const bindAttempts = 10

// transport is memberlist's NetTransport whose outgoing TCP streams end
// when ctx is done. memberlist's own dials (and Join) take no context and
// block up to TCPTimeout (10 s on a LAN) against an unreachable peer; with
// this, Stop interrupts an in-flight join at once instead of waiting.
type transport struct {
	*memberlist.NetTransport
	ctx context.Context
}

var _ memberlist.NodeAwareTransport = (*transport)(nil)

// newTransport binds the gossip listeners. Port 0 picks a free port.
func newTransport(ctx context.Context, bindAddr string, port int, logger *log.Logger) (*transport, error) {
	nc := &memberlist.NetTransportConfig{BindAddrs: []string{bindAddr}, BindPort: port, Logger: logger}
	attempts := 1
	if port == 0 {
		attempts = bindAttempts
	}
	var err error
	for range attempts {
		var nt *memberlist.NetTransport
		if nt, err = memberlist.NewNetTransport(nc); err == nil {
			return &transport{NetTransport: nt, ctx: ctx}, nil
		}
	}
	return nil, fmt.Errorf("bind gossip %s:%d: %w", bindAddr, port, err)
}

// DialTimeout implements memberlist.Transport.
func (t *transport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	return t.DialAddressTimeout(memberlist.Address{Addr: addr}, timeout)
}

// DialAddressTimeout implements memberlist.NodeAwareTransport. The
// returned connection is closed when t.ctx is done.
func (t *transport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	conn, err := d.DialContext(t.ctx, "tcp", a.Addr)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(t.ctx, func() { _ = conn.Close() })
	return &abortableConn{Conn: conn, stop: stop}, nil
}

// abortableConn releases its context.AfterFunc registration on Close.
type abortableConn struct {
	net.Conn
	stop func() bool
}

func (c *abortableConn) Close() error {
	c.stop()
	return c.Conn.Close()
}

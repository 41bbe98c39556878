package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// benchTransport is the load generator's HTTP/1.1 transport to one node:
// keep-alive connections, each written and read by the goroutine whose
// request it carries. net/http's Transport hands every request to two
// goroutines of its connection, a writer and a reader; on the two cores the
// load generator shares with the node and its database, those hand-offs
// were about a fifth of its CPU. Answers are read whole, so a connection is
// free again when RoundTrip returns. A request is sent again only when a
// reused connection fails before any byte of its answer arrived (the node
// closed it while it was idle), as net/http does.
type benchTransport struct {
	dialer  net.Dialer
	tls     *tls.Config // https: trusted roots (nil: plain http only)
	maxIdle int         // per host

	mu   sync.Mutex
	idle map[string]chan *benchConn // host -> its idle connections (a routing client talks to several)
}

type benchConn struct {
	host string
	c    net.Conn
	r    *countingReader
	br   *bufio.Reader
	bw   *bufio.Writer
}

// countingReader counts the bytes read from a connection, so that a failed
// exchange tells whether any of its answer had arrived.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// newBenchTransport keeps up to maxIdle connections; with tlsCfg it speaks
// https (and only https), trusting tlsCfg's roots.
func newBenchTransport(maxIdle int, tlsCfg *tls.Config) *benchTransport {
	return &benchTransport{dialer: net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second},
		tls: tlsCfg, maxIdle: maxIdle, idle: map[string]chan *benchConn{}}
}

// pool is host's idle connections.
func (t *benchTransport) pool(host string) chan *benchConn {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok := t.idle[host]
	if !ok {
		p = make(chan *benchConn, t.maxIdle)
		t.idle[host] = p
	}
	return p
}

// errBenchScheme: a request of the other scheme than the transport's.
var errBenchScheme = errors.New("bench transport: http without TLS, https with it")

// scheme is what the transport speaks.
func (t *benchTransport) scheme() string {
	if t.tls != nil {
		return "https"
	}
	return "http"
}

func (t *benchTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != t.scheme() {
		closeBody(req)
		return nil, errBenchScheme
	}
	body, err := readBody(req)
	if err != nil {
		return nil, err
	}
	for fresh := false; ; fresh = true {
		conn, reused, err := t.conn(req.Context(), t.hostPort(req.URL.Host), fresh)
		if err != nil {
			return nil, err
		}
		before := conn.r.n
		resp, reusable, err := conn.exchange(req, body)
		if err == nil {
			t.put(conn, resp.Close || !reusable)
			return resp, nil
		}
		_ = conn.c.Close()
		// A reused connection the node closed while idle fails (EOF,
		// reset) before any answer: the request is sent again once, on a
		// new connection.
		if !reused || fresh || conn.r.n != before || req.Context().Err() != nil {
			return nil, err
		}
	}
}

// conn takes an idle connection, or dials one when there is none or when
// fresh is set; reused says it was idle.
func (t *benchTransport) conn(ctx context.Context, host string, fresh bool) (*benchConn, bool, error) {
	if !fresh {
		select {
		case c := <-t.pool(host):
			return c, true, nil
		default:
		}
	}
	c, err := t.dial(ctx, host)
	if err != nil {
		return nil, false, err
	}
	r := &countingReader{r: c}
	return &benchConn{host: host, c: c, r: r, br: bufio.NewReaderSize(r, 8<<10), bw: bufio.NewWriterSize(c, 8<<10)}, false, nil
}

// dial connects to host, over TLS (handshake done) when the transport has it.
func (t *benchTransport) dial(ctx context.Context, host string) (net.Conn, error) {
	c, err := t.dialer.DialContext(ctx, "tcp", host)
	if err != nil || t.tls == nil {
		return c, err
	}
	cfg := t.tls.Clone()
	cfg.ServerName, _, _ = net.SplitHostPort(host)
	tc := tls.Client(c, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = c.Close()
		return nil, err
	}
	return tc, nil
}

// hostPort adds the scheme's port to a host that names none.
func (t *benchTransport) hostPort(host string) string {
	if _, _, err := net.SplitHostPort(host); err != nil {
		port := map[bool]string{false: "80", true: "443"}[t.tls != nil]
		return net.JoinHostPort(strings.Trim(host, "[]"), port)
	}
	return host
}

// put keeps c for the next request unless the answer closed it or the
// pool is full.
func (t *benchTransport) put(c *benchConn, closing bool) {
	if !closing {
		select {
		case t.pool(c.host) <- c:
			return
		default:
		}
	}
	_ = c.c.Close()
}

// CloseIdleConnections closes the pooled connections (http.Client calls
// it through CloseIdleConnections).
func (t *benchTransport) CloseIdleConnections() {
	t.mu.Lock()
	pools := slices.Collect(maps.Values(t.idle))
	t.mu.Unlock()
	for _, p := range pools {
		drainIdle(p)
	}
}

func drainIdle(p chan *benchConn) {
	for {
		select {
		case c := <-p:
			_ = c.c.Close()
		default:
			return
		}
	}
}

// exchange writes req and reads its whole answer. The request's context
// bounds it: its end (and only that: the socket has no deadline of its
// own, so an error is never a deadline the context has not reached yet)
// interrupts the connection's reads and writes. reusable is false when
// that interruption may still come, after the answer: the connection
// must not carry another request.
func (c *benchConn) exchange(req *http.Request, body []byte) (resp *http.Response, reusable bool, err error) {
	ctx := req.Context()
	_ = c.c.SetDeadline(time.Time{})
	stop := context.AfterFunc(ctx, func() { _ = c.c.SetDeadline(time.Unix(1, 0)) })
	defer func() { reusable = stop() }()
	out := *req
	out.Body, out.ContentLength = nil, 0
	if len(body) > 0 {
		out.Body, out.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	}
	if err := out.Write(c.bw); err != nil {
		return nil, false, ctxErr(ctx, err)
	}
	if err := c.bw.Flush(); err != nil {
		return nil, false, ctxErr(ctx, err)
	}
	resp, err = readAnswer(c.br, req)
	if err != nil {
		return nil, false, ctxErr(ctx, err)
	}
	data, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, false, ctxErr(ctx, err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(data))
	return resp, true, nil
}

// errBenchUpgrade: a node answered 101 Switching Protocols, which the bench
// never asks for.
var errBenchUpgrade = errors.New("bench transport: unexpected 101 Switching Protocols")

// readAnswer reads the final answer to req, past informational ones.
func readAnswer(br *bufio.Reader, req *http.Request) (*http.Response, error) {
	for {
		resp, err := http.ReadResponse(br, req)
		switch {
		case err != nil:
			return nil, err
		case resp.StatusCode == http.StatusSwitchingProtocols:
			return nil, errBenchUpgrade
		case resp.StatusCode >= 100 && resp.StatusCode < 200:
			continue
		}
		return resp, nil
	}
}

// ctxErr reports the context's end rather than the I/O error it caused.
func ctxErr(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	return err
}

func readBody(req *http.Request) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	defer closeBody(req)
	return io.ReadAll(req.Body)
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"time"
)

// benchTransport is the load generator's HTTP/1.1 transport to one node:
// keep-alive connections, each written and read by the goroutine whose
// request it carries. net/http's Transport hands every request to two
// goroutines of its connection, a writer and a reader; on the two cores the
// load generator shares with the node and its database, those hand-offs
// were about a fifth of its CPU. Answers are read whole, so a connection is
// free again when RoundTrip returns.
type benchTransport struct {
	dialer net.Dialer
	idle   chan *benchConn
}

type benchConn struct {
	c  net.Conn
	br *bufio.Reader
	bw *bufio.Writer
}

func newBenchTransport(maxIdle int) *benchTransport {
	return &benchTransport{dialer: net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second},
		idle: make(chan *benchConn, maxIdle)}
}

// errBenchScheme: the bench speaks plain HTTP only (the stock transport
// takes https addresses; see newBench).
var errBenchScheme = errors.New("bench transport: plain http only")

func (t *benchTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "http" {
		closeBody(req)
		return nil, errBenchScheme
	}
	body, err := readBody(req)
	if err != nil {
		return nil, err
	}
	for fresh := false; ; fresh = true {
		conn, reused, err := t.conn(req.Context(), req.URL.Host, fresh)
		if err != nil {
			return nil, err
		}
		resp, err := conn.exchange(req, body)
		if err == nil {
			t.put(conn, resp.Close)
			return resp, nil
		}
		_ = conn.c.Close()
		// A reused connection the node closed while idle fails (EOF,
		// reset) without an answer: the request is sent again once, on
		// a new connection. Every request of the bench may be repeated:
		// its starts and signals are keyed, the rest are reads.
		if !reused || fresh || req.Context().Err() != nil {
			return nil, err
		}
	}
}

// conn takes an idle connection, or dials one when there is none or when
// fresh is set; reused says it was idle.
func (t *benchTransport) conn(ctx context.Context, host string, fresh bool) (*benchConn, bool, error) {
	if !fresh {
		select {
		case c := <-t.idle:
			return c, true, nil
		default:
		}
	}
	c, err := t.dialer.DialContext(ctx, "tcp", host)
	if err != nil {
		return nil, false, err
	}
	return &benchConn{c: c, br: bufio.NewReaderSize(c, 8<<10), bw: bufio.NewWriterSize(c, 8<<10)}, false, nil
}

// put keeps c for the next request unless the answer closed it or the
// pool is full.
func (t *benchTransport) put(c *benchConn, closing bool) {
	if !closing {
		select {
		case t.idle <- c:
			return
		default:
		}
	}
	_ = c.c.Close()
}

// CloseIdleConnections closes the pooled connections (http.Client calls
// it through CloseIdleConnections).
func (t *benchTransport) CloseIdleConnections() {
	for {
		select {
		case c := <-t.idle:
			_ = c.c.Close()
		default:
			return
		}
	}
}

// exchange writes req and reads its whole answer. The request's context
// bounds it: its end interrupts the connection's reads and writes.
func (c *benchConn) exchange(req *http.Request, body []byte) (*http.Response, error) {
	ctx := req.Context()
	if deadline, ok := ctx.Deadline(); ok {
		_ = c.c.SetDeadline(deadline)
	} else {
		_ = c.c.SetDeadline(time.Time{})
	}
	stop := context.AfterFunc(ctx, func() { _ = c.c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	out := req.Clone(ctx)
	out.Body, out.ContentLength = nil, 0
	if len(body) > 0 {
		out.Body, out.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	}
	if err := out.Write(c.bw); err != nil {
		return nil, ctxErr(ctx, err)
	}
	if err := c.bw.Flush(); err != nil {
		return nil, ctxErr(ctx, err)
	}
	resp, err := http.ReadResponse(c.br, req)
	if err != nil {
		return nil, ctxErr(ctx, err)
	}
	data, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, ctxErr(ctx, err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(data))
	return resp, nil
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

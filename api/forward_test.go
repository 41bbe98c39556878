package api

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// TestForwardFailed: a forward that gets no answer says whether the
// request may have reached the owner. An owner that cannot be reached is
// 503 unavailable (nothing was sent: any client retries it); an owner
// that took the request and lost its answer is 502 forward_failed (a
// client retries only a request whose replay has the effect of one), and
// the start it served is the only run.
func TestForwardFailed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	proxyTo := func(t *testing.T, url string) string {
		srv, err := New(Config{NodeKey: testNodeKey, NodeID: "proxy"}, remoteStarts{&movingRouter{single: single{b.engine}, url: url}})
		require.NoError(t, err)
		ts := httptest.NewServer(srv)
		t.Cleanup(ts.Close)
		return ts.URL + BasePath
	}
	post := func(t *testing.T, base string) response {
		res, err := http.Post(base+"/workflows/block/start", "application/json", bytes.NewReader([]byte(`{}`)))
		require.NoError(t, err)
		defer res.Body.Close()
		return decodeResponse(t, res)
	}

	t.Run("UnreachableOwnerIs503", func(t *testing.T) {
		before := b.counts(t)
		requireError(t, post(t, proxyTo(t, closedURL(t))), http.StatusServiceUnavailable, codeUnavailable)
		require.Equal(t, before, b.counts(t))
	})
	t.Run("TheFailureLogNamesBothNodesOnce", func(t *testing.T) {
		// node_id is the node that logs (its root logger carries it);
		// the owner it could not reach is to_node_id, not a second
		// node_id that a JSON reader would take in place of the first.
		var logs syncBuffer
		root := zerolog.New(&logs).Level(zerolog.DebugLevel).With().Str("node_id", "proxy").Logger()
		srv, err := New(Config{NodeKey: testNodeKey, NodeID: "proxy", Logger: root},
			remoteStarts{&movingRouter{single: single{b.engine}, url: closedURL(t)}})
		require.NoError(t, err)
		ts := httptest.NewServer(srv)
		t.Cleanup(ts.Close)
		requireError(t, post(t, ts.URL+BasePath), http.StatusServiceUnavailable, codeUnavailable)
		line := logLine(t, logs.String(), "forward failed")
		require.Equal(t, 1, strings.Count(line, `"node_id":`), "%s", line)
		require.Contains(t, line, `"node_id":"proxy"`)
		require.Contains(t, line, `"to_node_id":"owner"`)
	})
	t.Run("AFailedTLSHandshakeIs503", func(t *testing.T) {
		// An owner whose certificate the node does not trust: the
		// handshake fails before any of the request is sent.
		var served atomic.Bool
		owner := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served.Store(true) }))
		t.Cleanup(owner.Close)
		before := b.counts(t)
		requireError(t, post(t, proxyTo(t, owner.URL)), http.StatusServiceUnavailable, codeUnavailable)
		require.False(t, served.Load())
		require.Equal(t, before, b.counts(t))
	})
	t.Run("LostAnswerIs502", func(t *testing.T) {
		owner, err := New(Config{NodeKey: testNodeKey, NodeID: "owner"}, SingleShard(b.engine))
		require.NoError(t, err)
		// The owner serves the start, then its connection drops before
		// the answer leaves: the run exists, the proxy sees no answer.
		served := make(chan int, 1)
		dropping := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rec := httptest.NewRecorder()
			owner.ServeHTTP(rec, r)
			served <- rec.Code
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				_ = conn.Close()
			}
		}))
		t.Cleanup(dropping.Close)
		before := b.counts(t)
		r := post(t, proxyTo(t, dropping.URL))
		require.Equal(t, http.StatusCreated, <-served, "the owner started the run")
		requireError(t, r, http.StatusBadGateway, codeForwardFailed)
		after := b.counts(t)
		require.Equal(t, before[0]+1, after[0], "one run, which a retry of the keyless start would double")
	})
}

// closedURL is the URL of a loopback port nothing listens on.
func closedURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	url := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close())
	return url
}

// logLine is the one log line whose message is msg.
func logLine(t *testing.T, logs, msg string) string {
	var found []string
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, `"message":"`+msg+`"`) {
			found = append(found, line)
		}
	}
	require.Len(t, found, 1, "%s", logs)
	return found[0]
}

// TestForwardedAnswer: a forwarded answer reaches the client as the owner
// wrote it, status, body and length, even one longer than a copy buffer.
func TestForwardedAnswer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	owner, err := New(Config{NodeKey: testNodeKey, NodeID: "owner"}, SingleShard(b.engine))
	require.NoError(t, err)
	ots := httptest.NewServer(owner)
	t.Cleanup(ots.Close)
	proxy, err := New(Config{NodeKey: testNodeKey, NodeID: "proxy"}, remoteStarts{&movingRouter{single: single{b.engine}, url: ots.URL}})
	require.NoError(t, err)
	pts := httptest.NewServer(proxy)
	t.Cleanup(pts.Close)
	get := func(t *testing.T, url string) (*http.Response, []byte) {
		res, err := http.Get(url)
		require.NoError(t, err)
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res, body
	}
	pad := strings.Repeat("x", 10<<10)
	res, err := http.Post(pts.URL+BasePath+"/workflows/typed/start", "application/json",
		strings.NewReader(`{"input":{"user_id":1,"pad":"`+pad+`"}}`))
	require.NoError(t, err)
	started := decodeResponse(t, res)
	require.Equal(t, http.StatusCreated, started.Status, string(started.Raw))
	require.Equal(t, int64(len(started.Raw)), res.ContentLength)
	path := BasePath + "/workflows/" + started.Body["execution_id"].(string) + "/history"
	fwd, fwdBody := get(t, pts.URL+path)
	direct, directBody := get(t, ots.URL+path)
	require.Equal(t, direct.StatusCode, fwd.StatusCode)
	require.Equal(t, string(directBody), string(fwdBody))
	require.Contains(t, string(fwdBody), pad)
	require.Equal(t, direct.ContentLength, fwd.ContentLength, "the owner's length, or chunked as the owner's")
}

// TestForwardSpeaksHTTP1: a forward reaches an owner that offers HTTP/2
// over HTTP/1.1 (forwardFailed's rule of what was sent rests on it).
func TestForwardSpeaksHTTP1(t *testing.T) {
	t.Parallel()
	b := setup(t)
	owner, err := New(Config{NodeKey: testNodeKey, NodeID: "owner"}, SingleShard(b.engine))
	require.NoError(t, err)
	protos := make(chan string, 1)
	ots := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		protos <- r.Proto
		owner.ServeHTTP(w, r)
	}))
	ots.EnableHTTP2 = true
	ots.StartTLS()
	t.Cleanup(ots.Close)
	roots := x509.NewCertPool()
	roots.AddCert(ots.Certificate())
	proxy, err := New(Config{NodeKey: testNodeKey, NodeID: "proxy", ForwardTLS: &tls.Config{RootCAs: roots}},
		remoteStarts{&movingRouter{single: single{b.engine}, url: ots.URL}})
	require.NoError(t, err)
	pts := httptest.NewServer(proxy)
	t.Cleanup(pts.Close)
	res, err := http.Post(pts.URL+BasePath+"/workflows/block/start", "application/json", strings.NewReader(`{}`))
	require.NoError(t, err)
	r := decodeResponse(t, res)
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	require.Equal(t, "HTTP/1.1", <-protos)
}

// remoteStarts places every start on the moving router's remote shard.
type remoteStarts struct{ *movingRouter }

func (r remoteStarts) ForStart(string, string, string) (Target, error) { return r.ForShard(0) }

// BenchmarkCopyAnswer: copying a forwarded answer's body (a reader and a
// writer without WriteTo and ReadFrom, as net/http's body and gin's
// writer) through the pooled buffer against io.Copy.
func BenchmarkCopyAnswer(b *testing.B) {
	answer := bytes.Repeat([]byte("x"), 600) // a start's answer
	for _, c := range []struct {
		name string
		copy func(io.Writer, io.Reader) error
	}{
		{"pooled", copyAnswer},
		{"io.Copy", func(w io.Writer, r io.Reader) error { _, err := io.Copy(w, r); return err }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := c.copy(writerOnly{io.Discard}, readerOnly{bytes.NewReader(answer)}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

type (
	writerOnly struct{ io.Writer }
	readerOnly struct{ io.Reader }
)

package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBenchTransport(t *testing.T) {
	var conns, cutHits atomic.Int64
	release := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/echo":
			w.Header().Set("X-Method", r.Method)
			_, _ = w.Write(append([]byte(r.Header.Get("X-Tag")+":"), body...))
		case "/chunked":
			for _, part := range []string{"one,", "two,", "three"} {
				_, _ = io.WriteString(w, part)
				w.(http.Flusher).Flush()
			}
		case "/close":
			w.Header().Set("Connection", "close")
			_, _ = io.WriteString(w, "bye")
		case "/block":
			<-release
		case "/cut":
			// Answers with half a body and hangs up: the request was
			// handled, so it must not be sent again.
			cutHits.Add(1)
			conn, bw, err := w.(http.Hijacker).Hijack()
			if err != nil {
				return
			}
			_, _ = bw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nhalf")
			_ = bw.Flush()
			_ = conn.Close()
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	hc := &http.Client{Transport: newBenchTransport(4, nil)}
	do := func(t *testing.T, ctx context.Context, method, path, body string) (*http.Response, string, error) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, srv.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("X-Tag", "t")
		resp, err := hc.Do(req)
		if err != nil {
			return nil, "", err
		}
		defer resp.Body.Close()
		got, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, string(got), nil
	}

	t.Run("RequestsShareOneConnection", func(t *testing.T) {
		before := conns.Load()
		for i := range 20 {
			method := http.MethodPost
			if i%2 == 1 {
				method = http.MethodGet
			}
			resp, body, err := do(t, context.Background(), method, "/echo", "payload")
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.Equal(t, method, resp.Header.Get("X-Method"))
			if method == http.MethodPost {
				require.Equal(t, "t:payload", body)
			}
		}
		require.Equal(t, before+1, conns.Load(), "one keep-alive connection for sequential requests")
	})

	t.Run("ConcurrentRequestsGetTheirOwnAnswers", func(t *testing.T) {
		const workers, each = 16, 40
		shared := &http.Client{Transport: newBenchTransport(workers, nil)}
		before := conns.Load()
		exchange := func(want string) error {
			req, err := http.NewRequest(http.MethodPost, srv.URL+"/echo", strings.NewReader(want))
			if err != nil {
				return err
			}
			req.Header.Set("X-Tag", want)
			resp, err := shared.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			got, err := io.ReadAll(resp.Body)
			if err != nil {
				return err
			}
			if string(got) != want+":"+want {
				return fmt.Errorf("request %q got the answer %q", want, got)
			}
			return nil
		}
		errs := make(chan error, workers)
		for w := range workers {
			go func() {
				for i := range each {
					if err := exchange(fmt.Sprintf("w%d-%d", w, i)); err != nil {
						errs <- err
						return
					}
				}
				errs <- nil
			}()
		}
		for range workers {
			require.NoError(t, <-errs)
		}
		require.LessOrEqual(t, conns.Load()-before, int64(workers),
			"a connection is reused, never shared: at most one per request in flight")
	})

	t.Run("ChunkedAnswersAreReadWhole", func(t *testing.T) {
		_, body, err := do(t, context.Background(), http.MethodGet, "/chunked", "")
		require.NoError(t, err)
		require.Equal(t, "one,two,three", body)
	})

	t.Run("AClosingAnswerIsNotReused", func(t *testing.T) {
		_, body, err := do(t, context.Background(), http.MethodGet, "/close", "")
		require.NoError(t, err)
		require.Equal(t, "bye", body)
		before := conns.Load()
		_, _, err = do(t, context.Background(), http.MethodGet, "/echo", "")
		require.NoError(t, err)
		require.Equal(t, before+1, conns.Load(), "the closed connection was not taken again")
	})

	t.Run("AnIdleConnectionTheServerClosedIsReplaced", func(t *testing.T) {
		_, _, err := do(t, context.Background(), http.MethodGet, "/echo", "")
		require.NoError(t, err)
		srv.CloseClientConnections()
		before := conns.Load()
		_, body, err := do(t, context.Background(), http.MethodPost, "/echo", "again")
		require.NoError(t, err)
		require.Equal(t, "t:again", body)
		require.Equal(t, before+1, conns.Load())
	})

	t.Run("TheContextBoundsTheExchange", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_, _, err := do(t, ctx, http.MethodGet, "/block", "")
		require.ErrorIs(t, err, context.DeadlineExceeded)

		ctx, cancel = context.WithCancel(context.Background())
		stop := time.AfterFunc(50*time.Millisecond, cancel)
		defer stop.Stop()
		_, _, err = do(t, ctx, http.MethodGet, "/block", "")
		require.ErrorIs(t, err, context.Canceled)
	})

	t.Run("AnAnswerCutShortIsNotSentAgain", func(t *testing.T) {
		_, _, err := do(t, context.Background(), http.MethodGet, "/echo", "")
		require.NoError(t, err) // the next request goes out on a reused connection
		_, _, err = do(t, context.Background(), http.MethodPost, "/cut", "x")
		require.Error(t, err)
		require.EqualValues(t, 1, cutHits.Load(), "part of the answer had arrived: no second send")
	})

	t.Run("AnEndedContextDoesNotReachTheNextRequest", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		_, _, err := do(t, ctx, http.MethodGet, "/echo", "")
		require.NoError(t, err)
		<-ctx.Done()
		before := conns.Load()
		_, body, err := do(t, context.Background(), http.MethodPost, "/echo", "later")
		require.NoError(t, err)
		require.Equal(t, "t:later", body)
		require.Equal(t, before, conns.Load(), "the same connection, its deadline gone with its request")
	})

	t.Run("HTTPSWithoutTLSIsRefused", func(t *testing.T) {
		req, err := http.NewRequest(http.MethodGet, "https://example.invalid/", nil)
		require.NoError(t, err)
		_, err = newBenchTransport(1, nil).RoundTrip(req)
		require.ErrorIs(t, err, errBenchScheme)
	})
}

// TestBenchTransportTLS: with a TLS configuration the bench transport
// speaks https over kept-alive connections, verifies the node against the
// configured roots, and refuses plain http.
func TestBenchTransportTLS(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		_, _ = w.Write(append([]byte("tls:"), body...))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	trusting := &tls.Config{RootCAs: x509.NewCertPool()}
	trusting.RootCAs.AddCert(srv.Certificate())
	send := func(tr *benchTransport, url string) (string, error) {
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader("x"))
		require.NoError(t, err)
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		got, err := io.ReadAll(resp.Body)
		return string(got), err
	}
	t.Run("KeepAliveOverTLS", func(t *testing.T) {
		tr := newBenchTransport(2, trusting)
		for range 5 {
			got, err := send(tr, srv.URL)
			require.NoError(t, err)
			require.Equal(t, "tls:x", got)
		}
		require.Equal(t, int64(1), conns.Load(), "one connection for every request")
	})
	t.Run("AnUntrustedNodeIsRefused", func(t *testing.T) {
		_, err := send(newBenchTransport(1, &tls.Config{RootCAs: x509.NewCertPool()}), srv.URL)
		require.ErrorContains(t, err, "certificate")
	})
	t.Run("PlainHTTPIsRefused", func(t *testing.T) {
		_, err := send(newBenchTransport(1, trusting), strings.Replace(srv.URL, "https://", "http://", 1))
		require.ErrorIs(t, err, errBenchScheme)
	})
}

// TestBenchTransportHosts: a connection is reused only for its own host (a
// routing client sends to several nodes over one transport).
func TestBenchTransportHosts(t *testing.T) {
	serve := func(name string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, name)
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	a, b := serve("a"), serve("b")
	hc := &http.Client{Transport: newBenchTransport(4, nil)}
	for i := range 6 {
		url, want := a, "a"
		if i%2 == 1 {
			url, want = b, "b"
		}
		resp, err := hc.Get(url)
		require.NoError(t, err)
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, want, string(got), "request %d", i)
	}
}

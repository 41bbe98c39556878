package api

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

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
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		url := "http://" + ln.Addr().String()
		require.NoError(t, ln.Close())
		before := b.counts(t)
		requireError(t, post(t, proxyTo(t, url)), http.StatusServiceUnavailable, codeUnavailable)
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

// remoteStarts places every start on the moving router's remote shard.
type remoteStarts struct{ *movingRouter }

func (r remoteStarts) ForStart(string, string, string) (Target, error) { return r.ForShard(0) }

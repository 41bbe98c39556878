package api

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest/auth"
)

// sigBundle is a clear-text cluster of three nodes over one shard: proxy
// forwards every start to owner, whose requests an eavesdropper captures
// on the way; other is a third node of the same cluster key.
type sigBundle struct {
	*testBundle
	proxy, owner, other string // base URLs
	captured            chan captured
}

// captured is a request as it went over the wire.
type captured struct {
	uri    string
	header http.Header
	body   []byte
}

func setupSig(t *testing.T) *sigBundle {
	t.Helper()
	b := &sigBundle{testBundle: setup(t), captured: make(chan captured, 1)}
	serve := func(h http.Handler) string {
		ts := httptest.NewServer(h)
		t.Cleanup(ts.Close)
		return ts.URL
	}
	owner, err := New(Config{NodeKey: testNodeKey, NodeID: "owner"}, SingleShard(b.engine))
	require.NoError(t, err)
	b.owner = serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		require.NoError(t, err)
		select {
		case b.captured <- captured{uri: r.RequestURI, header: r.Header.Clone(), body: body}:
		default:
		}
		if len(body) > 0 { // else the server's http.NoBody stays
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		owner.ServeHTTP(w, r)
	}))
	other, err := New(Config{NodeKey: testNodeKey, NodeID: "other"}, SingleShard(b.engine))
	require.NoError(t, err)
	b.other = serve(other)
	proxy, err := New(Config{NodeKey: testNodeKey, NodeID: "proxy"}, remoteStarts{&movingRouter{single: single{b.engine}, url: b.owner}})
	require.NoError(t, err)
	b.proxy = serve(proxy)
	return b
}

// forward starts a run through the proxy (headers alternate name, value)
// and returns the proxy's answer and the forwarded request it sent.
func (b *sigBundle) forward(t *testing.T, body string, headers ...string) (response, captured) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.proxy+BasePath+"/workflows/block/start", bytes.NewBufferString(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for i := 1; i < len(headers); i += 2 {
		req.Header.Set(headers[i-1], headers[i])
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	r := decodeResponse(t, res)
	select {
	case c := <-b.captured:
		return r, c
	default:
		require.FailNow(t, "the start was not forwarded", "answer %d %s", r.Status, r.Raw)
		return r, captured{}
	}
}

// replay sends c, as the eavesdropper changed it, to the node at base.
func (b *sigBundle) replay(t *testing.T, base string, c captured) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+c.uri, bytes.NewReader(c.body))
	require.NoError(t, err)
	req.Header = c.header.Clone()
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	return decodeResponse(t, res)
}

// TestNodeSignatureBindsTheRequest: a request one node forwarded to
// another, captured on a clear-text network, is valid at that node only
// and only as it was sent: replayed to another node, or with its body or
// Idempotency-Key changed, added or dropped, it is refused (401) and
// changes nothing. Replayed unchanged to its own node within the skew it
// is served again (what TLS is for); a keyed start then only replays.
func TestNodeSignatureBindsTheRequest(t *testing.T) {
	t.Parallel()
	b := setupSig(t)
	first, keyed := b.forward(t, `{"input":"x"}`, "Idempotency-Key", "sig-1")
	require.Equal(t, http.StatusCreated, first.Status, "%s", first.Raw)
	fresh, keyless := b.forward(t, `{"input":"x"}`)
	require.Equal(t, http.StatusCreated, fresh.Status, "%s", fresh.Raw)
	refused := func(t *testing.T, base string, c captured) {
		t.Helper()
		before := b.counts(t)
		requireError(t, b.replay(t, base, c), http.StatusUnauthorized, codeUnauthenticated)
		require.Equal(t, before, b.counts(t), "no run, event, claim or signal")
	}
	changed := func(c captured, change func(h http.Header, body *[]byte)) captured {
		c.header = c.header.Clone()
		c.body = bytes.Clone(c.body)
		change(c.header, &c.body)
		return c
	}

	t.Run("ReplayedToItsNodeIsServed", func(t *testing.T) {
		r := b.replay(t, b.owner, keyed)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		require.Equal(t, true, r.Body["deduplicated"])
		require.Equal(t, first.Body["execution_id"], r.Body["execution_id"])
	})
	t.Run("ReplayedToAnotherNodeIs401", func(t *testing.T) {
		refused(t, b.other, keyed)
		refused(t, b.other, keyless)
	})
	t.Run("ChangedBodyIs401", func(t *testing.T) {
		for _, body := range []string{`{"input":"y"}`, `{"input":"x"} `, ""} {
			refused(t, b.owner, changed(keyless, func(h http.Header, b *[]byte) {
				*b = []byte(body)
				h.Del("Content-Length")
			}))
		}
	})
	t.Run("ChangedIdempotencyKeyIs401", func(t *testing.T) {
		refused(t, b.owner, changed(keyed, func(h http.Header, _ *[]byte) { h.Set("Idempotency-Key", "sig-2") }))
		refused(t, b.owner, changed(keyless, func(h http.Header, _ *[]byte) { h.Set("Idempotency-Key", "sig-3") }))
		refused(t, b.owner, changed(keyed, func(h http.Header, _ *[]byte) { h.Del("Idempotency-Key") }))
	})
}

// TestNodeAuthV1: a request signed in the v1 form only (a node of an older
// version) is refused by default and served by a node in the v1 mode of a
// rolling upgrade (Config.NodeAuthV1). A node in that mode signs in both
// forms, v1 first (what an older node reads), so a node of either mode
// serves it; and it still checks a v2 request's body.
func TestNodeAuthV1(t *testing.T) {
	t.Parallel()
	b := setup(t)
	serve := func(t *testing.T, v1 bool) string {
		srv, err := New(Config{NodeKey: testNodeKey, NodeID: "n1", NodeAuthV1: v1}, SingleShard(b.engine))
		require.NoError(t, err)
		ts := httptest.NewServer(srv)
		t.Cleanup(ts.Close)
		return ts.URL
	}
	strict, upgrading := serve(t, false), serve(t, true)
	const path = BasePath + "/workflows/block/start"
	body := []byte(`{"input":"x"}`)
	// signed is a start to base, signed as a node in the v1 mode; v1Only
	// leaves what a node of the older version sends.
	signed := func(t *testing.T, base, key string, v1Only bool) *http.Request {
		req, err := http.NewRequest(http.MethodPost, base+path, bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Idempotency-Key", key)
		SignNode(req, NodeSig{Key: testNodeKey, From: "n2", To: "n1", Identity: auth.Anonymous, Body: body, Time: time.Now(), V1: true})
		proofs := req.Header.Values(NodeAuthHeader)
		require.Len(t, proofs, 2)
		require.True(t, strings.HasPrefix(proofs[0], "v1 "), "the older version reads the first value: %q", proofs[0])
		require.True(t, strings.HasPrefix(proofs[1], "v2 "), proofs[1])
		if v1Only {
			req.Header[NodeAuthHeader] = proofs[:1]
			req.Header.Del(BodyDigestHeader)
		}
		return req
	}
	send := func(t *testing.T, req *http.Request) response {
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		return decodeResponse(t, res)
	}

	t.Run("V1IsRefusedByDefault", func(t *testing.T) {
		before := b.counts(t)
		r := send(t, signed(t, strict, "v1-refused", true))
		requireError(t, r, http.StatusUnauthorized, codeUnauthenticated)
		require.Contains(t, r.Body["error"], "v1")
		require.Equal(t, before, b.counts(t))
	})
	t.Run("V1IsAcceptedWithTheOption", func(t *testing.T) {
		r := send(t, signed(t, upgrading, "v1-accepted", true))
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
	})
	t.Run("BothFormsAreAcceptedEitherWay", func(t *testing.T) {
		for i, base := range []string{strict, upgrading} {
			r := send(t, signed(t, base, "both-"+strconv.Itoa(i), false))
			require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
		}
	})
	t.Run("TheV1ModeChecksAV2Body", func(t *testing.T) {
		req := signed(t, upgrading, "v1-mode-body", false)
		req.Body, req.ContentLength = io.NopCloser(strings.NewReader(`{"input":"y"}`)), int64(len(`{"input":"y"}`))
		before := b.counts(t)
		requireError(t, send(t, req), http.StatusUnauthorized, codeUnauthenticated)
		require.Equal(t, before, b.counts(t))
	})
	t.Run("TheServerSignsInTheFormOfItsMode", func(t *testing.T) {
		for _, v1 := range []bool{false, true} {
			srv := &Server{cfg: Config{NodeKey: testNodeKey, NodeAuthV1: v1}, now: time.Now}
			req := httptest.NewRequest(http.MethodGet, path, nil)
			srv.signNode(req, NodeSig{To: "n1"})
			require.Len(t, req.Header.Values(NodeAuthHeader), map[bool]int{false: 1, true: 2}[v1])
		}
	})
}

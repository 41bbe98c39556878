package api

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
)

// ForwardedHeader marks a request forwarded by another node (its value is
// that node's id). A node never forwards such a request again: it serves
// it if it holds the shard's lease, else answers 503 naming the owner it
// believes in.
const ForwardedHeader = "X-Harvest-Forwarded"

// ShardHeader names the shard a forwarded request is for: the receiver
// serves that shard instead of placing the request again, so two nodes
// with momentarily different catalogs cannot bounce it.
const ShardHeader = "X-Harvest-Shard"

// forwardTimeout bounds one forwarded request (result long-polls included).
const forwardTimeout = 60 * time.Second

// headers copied onto a forwarded request and back from its answer. The
// caller's Authorization is not among them: the forwarding node sends
// the identity it verified, signed with the cluster key (signNode). The
// Idempotency-Key is among them: the signature covers it.
var (
	forwardRequestHeaders  = []string{"Content-Type", "Idempotency-Key", "Accept", "Harvest-Task-Token"}
	forwardResponseHeaders = []string{"Content-Type", "Retry-After"}
)

// newForwardClient is the client of forwards and other node-to-node
// calls. It speaks HTTP/1.1 only, even to a server that offers HTTP/2:
// forwardFailed's "nothing was sent" rests on HTTP/1.1's transport, which
// reports a failure only once its write of the request has ended.
func newForwardClient(tlsCfg *tls.Config) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = tlsCfg
	t.ForceAttemptHTTP2 = false
	t.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{} // non-nil: no HTTP/2
	t.MaxIdleConns = 256
	t.MaxIdleConnsPerHost = 64
	t.IdleConnTimeout = 90 * time.Second
	return &http.Client{Transport: t, Timeout: forwardTimeout}
}

// serveOrForward returns the local shard of t, or forwards the request
// (with body) to t's owner and returns nil: the answer has been written.
func (s *Server) serveOrForward(c *gin.Context, t Target, body []byte) Shard {
	if t.Shard != nil {
		return t.Shard
	}
	s.forward(c, t, body)
	return nil
}

// forward sends the request to the owner of t and copies its answer back
// unchanged. At most one hop: a forwarded request is never forwarded again.
func (s *Server) forward(c *gin.Context, t Target, body []byte) {
	if from := c.GetHeader(ForwardedHeader); from != "" || t.URL == "" {
		abort(c, &apiError{status: http.StatusServiceUnavailable, code: codeUnavailable,
			msg:   fmt.Sprintf("shard %d is not served here; owner %q", t.ShardID, t.Owner),
			extra: gin.H{"owner": t.Owner, "shard_id": t.ShardID}})
		return
	}
	req, err := http.NewRequestWithContext(c.Request.Context(), c.Request.Method, t.URL+c.Request.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		s.fail(c, err)
		return
	}
	for _, h := range forwardRequestHeaders {
		if v, ok := c.Request.Header[h]; ok {
			req.Header[h] = v
		}
	}
	req.Header.Set(ShardHeader, strconv.Itoa(int(t.ShardID)))
	if epoch, ok := c.Get(epochKey); ok {
		req.Header.Set(EpochHeader, strconv.FormatUint(epoch.(uint64), 10))
	}
	s.signNode(req, NodeSig{To: t.Owner, Identity: identity(c), Body: body})
	var sent atomic.Bool // some of the request went to a connection
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		WroteHeaders: func() { sent.Store(true) },
	}))
	res, err := s.client.Do(req)
	if err != nil {
		s.log.Debug().Err(err).Uint16("shard_id", t.ShardID).Str("to_node_id", t.Owner).Bool("sent", sent.Load()).Msg("forward failed")
		abort(c, forwardFailed(t, sent.Load()))
		return
	}
	defer res.Body.Close()
	for _, h := range forwardResponseHeaders {
		if v := res.Header.Get(h); v != "" {
			c.Header(h, v)
		}
	}
	if res.ContentLength >= 0 {
		c.Header("Content-Length", strconv.FormatInt(res.ContentLength, 10))
	}
	c.Status(res.StatusCode)
	if err := copyAnswer(c.Writer, res.Body); err != nil {
		s.log.Debug().Err(err).Msg("copy forwarded answer")
	}
	c.Abort()
}

// copyBufs are the buffers forwarded answers are copied through (io.Copy
// would allocate 32 KiB for each: gin's writer has no ReadFrom).
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 4<<10); return &b }}

// copyAnswer copies a forwarded answer's body to w.
func copyAnswer(w io.Writer, body io.Reader) error {
	buf := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(buf)
	_, err := io.CopyBuffer(w, body, *buf)
	return err
}

// forwardFailed answers a forward that got no answer. When none of the
// request went to a connection (the owner could not be dialled, its TLS
// handshake failed), nothing was sent: 503, which any client retries.
// Otherwise the request may have reached the owner and taken effect
// before its answer was lost: 502 forward_failed, which a client retries
// only when a replay has the effect of one (an idempotency key, a GET),
// never a keyless start or signal.
func forwardFailed(t Target, sent bool) *apiError {
	extra := gin.H{"owner": t.Owner, "shard_id": t.ShardID}
	if !sent {
		return &apiError{status: http.StatusServiceUnavailable, code: codeUnavailable, extra: extra,
			msg: fmt.Sprintf("the owner of shard %d (%s) cannot be reached", t.ShardID, t.Owner)}
	}
	return &apiError{status: http.StatusBadGateway, code: codeForwardFailed, extra: extra,
		msg: fmt.Sprintf("the forward to the owner of shard %d (%s) got no answer; the request may have taken effect", t.ShardID, t.Owner)}
}

// pinnedShard is the shard a forwarded request names (ok false otherwise).
func pinnedShard(c *gin.Context) (uint16, bool) {
	if c.GetHeader(ForwardedHeader) == "" {
		return 0, false
	}
	n, err := strconv.ParseUint(c.GetHeader(ShardHeader), 10, 16)
	if err != nil {
		return 0, false
	}
	return uint16(n), true
}

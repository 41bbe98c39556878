package api

import (
	"cmp"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/harvestd/harvest/auth"
)

// Headers of node-to-node requests. A client's request that carries any
// X-Harvest-* header is refused (400); a node's must carry a valid
// NodeAuthHeader, or it is refused (401).
const (
	// IdentityHeader carries the identity the forwarding node verified:
	// "<scope> <token id>" ("-" for no token: authentication off).
	IdentityHeader = "X-Harvest-Identity"
	// NodeAuthHeader proves the request comes from a node holding the
	// cluster key: "v2 <unix ms> <signature>", the signature an
	// HMAC-SHA256 over the method, the request URI, the time, the body's
	// SHA-256 (BodyDigestHeader), the Idempotency-Key header, the
	// receiving node's id and the other X-Harvest-* headers. A node in
	// the v1 mode of a rolling upgrade (Config.NodeAuthV1) sends a
	// "v1 <unix ms> <signature>" value first, which covers neither the
	// body, the key nor the receiver.
	NodeAuthHeader = "X-Harvest-Node-Auth"
	// BodyDigestHeader is the hex SHA-256 of a node request's body (of
	// the empty body when it has none); a v2 signature covers it, and the
	// receiver checks the body against it as it reads it.
	BodyDigestHeader = "X-Harvest-Body-SHA256"
)

// The versions of NodeAuthHeader.
const (
	nodeAuthV1 = "v1"
	nodeAuthV2 = "v2"
)

// harvestHeaderPrefix starts every node-to-node header (canonical form).
const harvestHeaderPrefix = "X-Harvest-"

// nodeAuthSkew is how far a node request's time may be from this node's
// clock: the bound within which a captured signature can be replayed.
const nodeAuthSkew = 5 * time.Minute

// signedHeaders are the X-Harvest-* headers the signature covers.
var signedHeaders = []string{ForwardedHeader, ShardHeader, EpochHeader, IdentityHeader}

// errBodyDigest: a node request's body is not the one its signature
// covers (readBodyLimit answers it 401).
var errBodyDigest = errors.New("the body does not match the node request's signature")

// emptyBodyDigest is the SHA-256 of the empty body.
var emptyBodyDigest = sha256.Sum256(nil)

// NodeSig is what SignNode signs a request with, besides the request's
// own method, request URI and Idempotency-Key header.
type NodeSig struct {
	// Key is the cluster key's clusterkey.LabelHTTP key. Nil: the request
	// goes unsigned, and a receiver refuses it.
	Key []byte
	// From is the signing node's id (X-Harvest-Forwarded).
	From string
	// To is the receiving node's id: the signature is valid there only.
	To string
	// Identity is the caller's identity the signing node verified and
	// acts for.
	Identity auth.Identity
	// Body is the request's body, exactly as sent (nil: none).
	Body []byte
	// Time is when the request is signed.
	Time time.Time
	// V1 adds the v1 signature before the v2 one, for receivers of a
	// version that verifies only v1 (a rolling upgrade: Config.NodeAuthV1).
	V1 bool
}

// signNode makes req a node request of this node, sig's To, Identity and
// Body set by the caller.
func (s *Server) signNode(req *http.Request, sig NodeSig) {
	sig.Key, sig.From, sig.Time, sig.V1 = s.keys().sign, s.cfg.NodeID, s.now(), s.cfg.NodeAuthV1
	SignNode(req, sig)
}

// SignNode makes req a request of node sig.From to node sig.To. Set every
// other X-Harvest-* header and the Idempotency-Key header first: the
// signature covers them.
func SignNode(req *http.Request, sig NodeSig) {
	req.Header.Set(ForwardedHeader, sig.From)
	req.Header.Set(IdentityHeader, formatIdentity(sig.Identity))
	digest := sha256.Sum256(sig.Body)
	req.Header.Set(BodyDigestHeader, hex.EncodeToString(digest[:]))
	req.Header.Del(NodeAuthHeader)
	if len(sig.Key) == 0 {
		return
	}
	ms := strconv.FormatInt(sig.Time.UnixMilli(), 10)
	m := nodeMessage{method: req.Method, uri: req.URL.RequestURI(), ms: ms, h: req.Header}
	if sig.V1 {
		req.Header.Add(NodeAuthHeader, nodeAuthV1+" "+ms+" "+m.v1(sig.Key))
	}
	m.digest, m.receiver = req.Header.Get(BodyDigestHeader), sig.To
	req.Header.Add(NodeAuthHeader, nodeAuthV2+" "+ms+" "+m.v2(sig.Key))
}

// nodeCaller authenticates a node request: the identity it acts for, nil
// for a client's request. A client's request with X-Harvest-* headers,
// and a node request whose signature does not verify, are errors. A v2
// request's body is checked as it is read (errBodyDigest).
func (s *Server) nodeCaller(r *http.Request) (*auth.Identity, *apiError) {
	if r.Header.Get(NodeAuthHeader) == "" {
		return nil, refuseHarvestHeaders(r.Header)
	}
	if err := s.verifyNode(r); err != nil {
		return nil, unauthenticated("node request refused: " + err.Error())
	}
	id, ok := parseIdentity(r.Header.Get(IdentityHeader))
	if !ok {
		return nil, badRequest(codeInvalidArgument, "malformed "+IdentityHeader+" header")
	}
	return &id, nil
}

// verifyNode checks r's v2 signature, or its v1 one when this node
// accepts v1 and r has no v2 one. A verified v2 request's body is then
// checked against its digest as it is read.
func (s *Server) verifyNode(r *http.Request) error {
	if s.cfg.NodeCertRequired && (r.TLS == nil || len(r.TLS.VerifiedChains) == 0) {
		return fmt.Errorf("no client certificate of the cluster's CA (nodes use mutual TLS)")
	}
	keys := s.keys()
	if len(keys.verify) == 0 {
		return fmt.Errorf("this node has no cluster key")
	}
	var v1, v2 []string // "<unix ms>", "<signature>"
	for _, v := range r.Header.Values(NodeAuthHeader) {
		f := strings.Fields(v)
		switch {
		case len(f) == 3 && f[0] == nodeAuthV2 && v2 == nil:
			v2 = f[1:]
		case len(f) == 3 && f[0] == nodeAuthV1 && v1 == nil:
			v1 = f[1:]
		default:
			return fmt.Errorf("malformed %s", NodeAuthHeader)
		}
	}
	m := nodeMessage{method: r.Method, uri: r.RequestURI, h: r.Header}
	if v2 != nil {
		digest, err := parseBodyDigest(r.Header.Get(BodyDigestHeader))
		if err != nil {
			return err
		}
		m.ms, m.digest, m.receiver = v2[0], r.Header.Get(BodyDigestHeader), s.cfg.NodeID
		if err := s.checkProof(keys, v2, m.v2); err != nil {
			return err
		}
		return checkBody(r, digest)
	}
	if !s.cfg.NodeAuthV1 {
		return fmt.Errorf("a v1 signature (a node of an older version): this node accepts v2 only (--node-auth-v1 accepts v1 during a rolling upgrade)")
	}
	m.ms = v1[0]
	return s.checkProof(keys, v1, m.v1)
}

// checkProof checks a signature's time ("<unix ms>", proof[0]) and its
// MAC (proof[1]) under each of keys.
func (s *Server) checkProof(keys *nodeKeys, proof []string, sign func(key []byte) string) error {
	ms, err := strconv.ParseInt(proof[0], 10, 64)
	if err != nil {
		return fmt.Errorf("malformed %s", NodeAuthHeader)
	}
	if skew := s.now().Sub(time.UnixMilli(ms)); skew > nodeAuthSkew || skew < -nodeAuthSkew {
		return fmt.Errorf("signed %s away from this node's clock (at most %s)", skew.Round(time.Second), nodeAuthSkew)
	}
	if !keys.matches(proof[1], sign) {
		return fmt.Errorf("bad signature (is the cluster key the same on every node? was the request meant for this node?)")
	}
	return nil
}

// parseBodyDigest reads a BodyDigestHeader value.
func parseBodyDigest(v string) ([sha256.Size]byte, error) {
	var d [sha256.Size]byte
	if len(v) != 2*sha256.Size {
		return d, fmt.Errorf("malformed %s", BodyDigestHeader)
	}
	if _, err := hex.Decode(d[:], []byte(v)); err != nil {
		return d, fmt.Errorf("malformed %s", BodyDigestHeader)
	}
	return d, nil
}

// checkBody makes r's body checked against digest as it is read: at its
// end, a body of another digest fails with errBodyDigest. An empty body
// is checked at once.
func checkBody(r *http.Request, digest [sha256.Size]byte) error {
	if r.Body == nil || r.Body == http.NoBody {
		if digest != emptyBodyDigest {
			return errBodyDigest
		}
		return nil
	}
	r.Body = &digestBody{ReadCloser: r.Body, want: digest, h: sha256.New()}
	return nil
}

// digestBody is a node request's body, hashed as it is read.
type digestBody struct {
	io.ReadCloser
	want [sha256.Size]byte
	h    hash.Hash
	// bad: the body ended and did not match.
	bad bool
}

func (b *digestBody) Read(p []byte) (int, error) {
	if b.bad {
		return 0, errBodyDigest
	}
	n, err := b.ReadCloser.Read(p)
	b.h.Write(p[:n])
	if errors.Is(err, io.EOF) {
		var got [sha256.Size]byte
		if b.h.Sum(got[:0]); got != b.want {
			b.bad = true
			return n, errBodyDigest
		}
	}
	return n, err
}

// nodeMessage is what a node request's signature covers.
type nodeMessage struct {
	method, uri, ms string
	// digest and receiver: v2 only.
	digest, receiver string
	h                http.Header
}

// v1 signs the method, URI, time and signedHeaders, each ended by a
// newline.
func (m nodeMessage) v1(key []byte) string {
	buf := make([]byte, 0, 256)
	for _, v := range [...]string{m.method, m.uri, m.ms} {
		buf = append(append(buf, v...), '\n')
	}
	return m.mac(key, buf)
}

// v2 signs "v2", the method, URI, time, body digest, Idempotency-Key,
// receiver and signedHeaders, each ended by a newline.
func (m nodeMessage) v2(key []byte) string {
	buf := make([]byte, 0, 512)
	for _, v := range [...]string{nodeAuthV2, m.method, m.uri, m.ms, m.digest, m.h.Get("Idempotency-Key"), m.receiver} {
		buf = append(append(buf, v...), '\n')
	}
	return m.mac(key, buf)
}

// mac ends buf with signedHeaders and signs it.
func (m nodeMessage) mac(key, buf []byte) string {
	for _, name := range signedHeaders {
		buf = append(append(buf, m.h.Get(name)...), '\n')
	}
	h := hmac.New(sha256.New, key)
	h.Write(buf)
	return base64.RawURLEncoding.EncodeToString(h.Sum(buf[:0]))
}

// refuseHarvestHeaders refuses a client's request that sets headers only
// nodes may set.
func refuseHarvestHeaders(h http.Header) *apiError {
	for name := range h { // the server canonicalizes header names
		if strings.HasPrefix(name, harvestHeaderPrefix) {
			return badRequest(codeForgedHeader, "header "+name+" is for requests between nodes of the cluster; a client must not send it")
		}
	}
	return nil
}

func formatIdentity(id auth.Identity) string {
	return id.Scope.String() + " " + cmp.Or(id.TokenID, "-")
}

func parseIdentity(v string) (auth.Identity, bool) {
	scope, tokenID, ok := strings.Cut(v, " ")
	s, err := auth.ParseScope(scope)
	if !ok || err != nil || tokenID == "" {
		return auth.Identity{}, false
	}
	if tokenID == "-" {
		tokenID = ""
	}
	return auth.Identity{TokenID: tokenID, Scope: s}, true
}
